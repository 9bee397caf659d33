//! `CREATE TABLE`: its options, its clauses (each implemented or refused), its keys.

use sqlparser::ast::{
    CreateTable, CreateTableOptions, Expr, HiveDistributionStyle, Ident, NullsDistinctOption,
    Spanned, TableConstraint,
};

use crate::types::ColumnType;

use super::column::{column_options, column_type, ColumnFacts, DeclaredIndex};
use super::index::{add_index, index_columns, refuse_using, resolve};
use super::source::{err, ident_name, ident_pos, object_name, refuse, refuse_before, Pos, Source};
use super::{ColumnDef, Layout, SchemaError, TableDef, ROWID_COLUMN};

/// `WITH (layout = 'row' | 'columnar' | 'cells')`; any other table option is refused. Returns
/// the layout and whether the schema named it (row when it did not).
pub(super) fn table_layout(
    src: &Source,
    opts: &CreateTableOptions,
    tail: Pos,
) -> Result<(Layout, bool), SchemaError> {
    use sqlparser::ast::SqlOption;
    let list = match opts {
        CreateTableOptions::None => return Ok((Layout::Row, false)),
        CreateTableOptions::With(l) => l,
        CreateTableOptions::Options(_) => {
            return Err(refuse(
                src,
                tail,
                &["OPTIONS"],
                "OPTIONS (…)",
                "WITH (layout = 'columnar') is the one table option",
            ))
        }
        CreateTableOptions::Plain(l) => {
            let text = l.first().map_or(String::new(), |o| o.to_string());
            let first = text.split_whitespace().next().unwrap_or("");
            let at = src.find_after(tail, &[first]).unwrap_or(tail);
            return Err(err(at, format!("table option {text} is not supported (WITH (layout = 'columnar') is the one table option)")));
        }
        CreateTableOptions::TableProperties(_) => {
            return Err(refuse(
                src,
                tail,
                &["TBLPROPERTIES"],
                "TBLPROPERTIES",
                "WITH (layout = 'columnar') is the one table option",
            ))
        }
    };
    let mut layout = (Layout::Row, false);
    for o in list {
        match o {
            SqlOption::KeyValue { key, value } if ident_name(key) == "layout" => {
                let text = match value {
                    Expr::Value(v) => match &v.value {
                        sqlparser::ast::Value::SingleQuotedString(s)
                        | sqlparser::ast::Value::DoubleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    Expr::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                };
                let named = Layout::parse(&text).ok_or_else(|| {
                    err(
                        ident_pos(key),
                        format!("layout {text:?}: row, columnar or cells"),
                    )
                })?;
                layout = (named, true);
            }
            SqlOption::KeyValue { key, .. } => {
                return Err(err(
                    ident_pos(key),
                    format!("table option {o} is not supported (layout is)"),
                ))
            }
            other => {
                let at = src.find_after(tail, &["WITH"]).unwrap_or(tail);
                return Err(err(
                    at,
                    format!("table option {other} is not supported (layout is)"),
                ));
            }
        }
    }
    Ok(layout)
}

/// Refuses every CREATE TABLE clause but the name, columns, constraints and table options.
pub(super) fn refuse_table_clauses(
    src: &Source,
    ct: &CreateTable,
    at: Pos,
) -> Result<(), SchemaError> {
    let CreateTable {
        or_replace,
        temporary,
        external,
        dynamic,
        global,
        if_not_exists,
        transient,
        volatile,
        iceberg,
        name: _,
        columns: _,
        constraints: _,
        hive_distribution,
        hive_formats,
        table_options: _,
        file_format,
        location,
        query,
        without_rowid,
        like,
        clone,
        version,
        comment,
        on_commit,
        on_cluster,
        primary_key,
        order_by,
        partition_by,
        cluster_by,
        clustered_by,
        inherits,
        strict,
        copy_grants,
        enable_schema_evolution,
        change_tracking,
        data_retention_time_in_days,
        max_data_extension_time_in_days,
        default_ddl_collation,
        with_aggregation_policy,
        with_row_access_policy,
        with_tags,
        external_volume,
        base_location,
        catalog,
        catalog_sync,
        storage_serialization_policy,
        target_lag,
        warehouse,
        refresh_mode,
        initialize,
        require_user,
    } = ct;
    // Clauses before the name.
    let before: [(bool, &[&str], &str, &str); 10] = [
        (
            *or_replace,
            &["OR", "REPLACE"],
            "OR REPLACE",
            "an import adds rows to a table, it never replaces one",
        ),
        (
            *temporary,
            &["TEMPORARY"],
            "TEMPORARY",
            "imported tables are stored",
        ),
        (
            *external,
            &["EXTERNAL"],
            "EXTERNAL",
            "imported tables are stored in the Db",
        ),
        (*dynamic, &["DYNAMIC"], "DYNAMIC", "a dialect clause"),
        (
            *global == Some(true),
            &["GLOBAL"],
            "GLOBAL",
            "a temporary-table clause",
        ),
        (
            *global == Some(false),
            &["LOCAL"],
            "LOCAL",
            "a temporary-table clause",
        ),
        (
            *if_not_exists,
            &["IF", "NOT", "EXISTS"],
            "IF NOT EXISTS",
            "an import creates the table, or checks that the stored one is defined the same",
        ),
        (*transient, &["TRANSIENT"], "TRANSIENT", "a dialect clause"),
        (*volatile, &["VOLATILE"], "VOLATILE", "a dialect clause"),
        (*iceberg, &["ICEBERG"], "ICEBERG", "a dialect clause"),
    ];
    for (present, words, clause, why) in before {
        if present {
            // TEMPORARY is also spelled TEMP.
            let w: &[&str] = if clause == "TEMPORARY" && src.find_before(at, words).is_none() {
                &["TEMP"]
            } else {
                words
            };
            return Err(refuse_before(src, at, w, clause, why));
        }
    }
    // Clauses after the column list.
    let tail = src.after_parens(at);
    let after: [(bool, &[&str], &str); 34] = [
        (
            *hive_distribution != HiveDistributionStyle::NONE,
            &["PARTITIONED"],
            "PARTITIONED BY / CLUSTERED BY / SKEWED BY",
        ),
        (
            hive_formats.as_ref().is_some_and(hive_format_given),
            &["STORED"],
            "ROW FORMAT / STORED AS / LOCATION",
        ),
        (file_format.is_some(), &["STORED"], "STORED AS"),
        (location.is_some(), &["LOCATION"], "LOCATION"),
        (query.is_some(), &["AS"], "AS SELECT"),
        (*without_rowid, &["WITHOUT", "ROWID"], "WITHOUT ROWID"),
        (like.is_some(), &["LIKE"], "LIKE"),
        (clone.is_some(), &["CLONE"], "CLONE"),
        (version.is_some(), &["FOR"], "a table version"),
        (comment.is_some(), &["COMMENT"], "COMMENT"),
        (on_commit.is_some(), &["ON", "COMMIT"], "ON COMMIT"),
        (on_cluster.is_some(), &["ON", "CLUSTER"], "ON CLUSTER"),
        (
            primary_key.is_some(),
            &["PRIMARY"],
            "PRIMARY KEY after the column list (ClickHouse)",
        ),
        (order_by.is_some(), &["ORDER"], "ORDER BY"),
        (partition_by.is_some(), &["PARTITION"], "PARTITION BY"),
        (cluster_by.is_some(), &["CLUSTER"], "CLUSTER BY"),
        (clustered_by.is_some(), &["CLUSTERED"], "CLUSTERED BY"),
        (inherits.is_some(), &["INHERITS"], "INHERITS"),
        (*strict, &["STRICT"], "STRICT"),
        (*copy_grants, &["COPY", "GRANTS"], "COPY GRANTS"),
        (
            enable_schema_evolution.is_some(),
            &["ENABLE_SCHEMA_EVOLUTION"],
            "ENABLE_SCHEMA_EVOLUTION",
        ),
        (
            change_tracking.is_some(),
            &["CHANGE_TRACKING"],
            "CHANGE_TRACKING",
        ),
        (
            data_retention_time_in_days.is_some(),
            &["DATA_RETENTION_TIME_IN_DAYS"],
            "DATA_RETENTION_TIME_IN_DAYS",
        ),
        (
            max_data_extension_time_in_days.is_some(),
            &["MAX_DATA_EXTENSION_TIME_IN_DAYS"],
            "MAX_DATA_EXTENSION_TIME_IN_DAYS",
        ),
        (
            default_ddl_collation.is_some(),
            &["DEFAULT_DDL_COLLATION"],
            "DEFAULT_DDL_COLLATION",
        ),
        (
            with_aggregation_policy.is_some(),
            &["WITH", "AGGREGATION"],
            "WITH AGGREGATION POLICY",
        ),
        (
            with_row_access_policy.is_some(),
            &["WITH", "ROW"],
            "WITH ROW ACCESS POLICY",
        ),
        (with_tags.is_some(), &["WITH", "TAG"], "WITH TAG"),
        (
            external_volume.is_some() || base_location.is_some(),
            &["EXTERNAL_VOLUME"],
            "EXTERNAL_VOLUME / BASE_LOCATION",
        ),
        (
            catalog.is_some() || catalog_sync.is_some(),
            &["CATALOG"],
            "CATALOG",
        ),
        (
            storage_serialization_policy.is_some(),
            &["STORAGE_SERIALIZATION_POLICY"],
            "STORAGE_SERIALIZATION_POLICY",
        ),
        (
            target_lag.is_some() || warehouse.is_some(),
            &["TARGET_LAG"],
            "TARGET_LAG / WAREHOUSE",
        ),
        (
            refresh_mode.is_some() || initialize.is_some(),
            &["REFRESH_MODE"],
            "REFRESH_MODE / INITIALIZE",
        ),
        (*require_user, &["REQUIRE"], "REQUIRE USER"),
    ];
    for (present, words, clause) in after {
        if present {
            let p = src.find_after(tail, words).unwrap_or(tail);
            return Err(err(
                p,
                format!("{clause} is not supported (a dialect clause)"),
            ));
        }
    }
    Ok(())
}

/// Whether any Hive storage clause was written (the parser fills an empty one in).
pub(super) fn hive_format_given(h: &sqlparser::ast::HiveFormat) -> bool {
    let sqlparser::ast::HiveFormat {
        row_format,
        serde_properties,
        storage,
        location,
    } = h;
    row_format.is_some() || serde_properties.is_some() || storage.is_some() || location.is_some()
}

/// The keys a CREATE TABLE declares, by name and place, resolved once all columns are known.
#[derive(Default)]
pub(super) struct Keys {
    /// PRIMARY KEY columns and where it is written.
    pub(super) pk: Option<(Vec<(String, Pos)>, Pos)>,
    /// UNIQUE constraints: optional name, columns, place.
    pub(super) unique: Vec<DeclaredIndex>,
    /// MySQL's inline INDEX/KEY: optional name, columns, place.
    pub(super) plain: Vec<DeclaredIndex>,
}

pub(super) fn create_table(
    src: &Source,
    ct: &CreateTable,
    stmt: Pos,
) -> Result<TableDef, SchemaError> {
    let (name, at) = object_name(&ct.name, stmt)?;
    refuse_table_clauses(src, ct, at)?;
    let tail = src.after_parens(at);
    let (layout, layout_stated) = table_layout(src, &ct.table_options, tail)?;
    let mut t = TableDef {
        name,
        id: 0,
        version: 1,
        columns: Vec::new(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        layout,
        layout_stated,
    };
    let mut keys = Keys::default();
    let mut nullable_at: Vec<Option<Pos>> = Vec::new();
    for c in &ct.columns {
        let cname = ident_name(&c.name);
        let cat = ident_pos(&c.name);
        if let Some(old) = t
            .columns
            .iter()
            .find(|o| o.name.eq_ignore_ascii_case(&cname))
        {
            return Err(err(
                cat,
                if old.name == cname {
                    format!("column {cname} is defined twice")
                } else {
                    format!(
                        "columns {} and {cname} differ only in case (column names are matched ignoring case in headers, JSON keys and on the command line)",
                        old.name
                    )
                },
            ));
        }
        if cname.eq_ignore_ascii_case(ROWID_COLUMN) {
            return Err(err(
                cat,
                format!("column name {cname} is reserved (the hidden row id)"),
            ));
        }
        let ty = column_type(&c.data_type, src.next(c.name.span.end.into())).map_err(|e| {
            SchemaError {
                message: format!("column {cname}: {}", e.message),
                ..e
            }
        })?;
        let mut facts = ColumnFacts::default();
        column_options(src, c, &cname, cat, &mut facts, &mut keys)?;
        nullable_at.push(facts.null);
        t.columns.push(ColumnDef {
            name: cname,
            ty,
            not_null: facts.not_null.is_some(),
            hidden: false,
        });
    }
    if t.columns.is_empty() {
        return Err(err(at, format!("table {} has no columns", t.name)));
    }
    for con in &ct.constraints {
        table_constraint(src, con, at, &mut keys)?;
    }
    match keys.pk {
        Some((cols, _)) => {
            t.primary_key = resolve(&t, &cols, "PRIMARY KEY")?;
            for &i in &t.primary_key {
                if let Some(p) = nullable_at[i] {
                    return Err(err(
                        p,
                        format!(
                            "column {}: NULL conflicts with PRIMARY KEY (key columns are NOT NULL)",
                            t.columns[i].name
                        ),
                    ));
                }
                t.columns[i].not_null = true;
            }
        }
        None => {
            t.columns.push(ColumnDef {
                name: ROWID_COLUMN.into(),
                ty: ColumnType::BigInt,
                not_null: true,
                hidden: true,
            });
            t.primary_key = vec![t.columns.len() - 1];
        }
    }
    let mut n_unique = 0;
    for (unique, (name, cols, uat)) in keys
        .unique
        .into_iter()
        .map(|u| (true, u))
        .chain(keys.plain.into_iter().map(|p| (false, p)))
    {
        let cols = resolve(&t, &cols, if unique { "UNIQUE" } else { "INDEX" })?;
        let name = name.unwrap_or_else(|| {
            if unique {
                n_unique += 1;
                format!("{}_unique{n_unique}", t.name)
            } else {
                format!("{}_idx{}", t.name, t.indexes.len() + 1)
            }
        });
        add_index(&mut t, name, cols, unique, uat)?;
    }
    Ok(t)
}

/// One table constraint: PRIMARY KEY, UNIQUE, MySQL's INDEX/KEY; FOREIGN KEY, CHECK and
/// FULLTEXT/SPATIAL refused.
pub(super) fn table_constraint(
    src: &Source,
    con: &TableConstraint,
    table_at: Pos,
    keys: &mut Keys,
) -> Result<(), SchemaError> {
    let span = con.span().start;
    let anchor: Pos = if span.line == 0 {
        table_at
    } else {
        span.into()
    };
    // The keyword: after the constraint's name if it has one, else before its columns.
    let kw = |name: &Option<Ident>, words: &[&str]| match name {
        Some(n) => src.find_after(ident_pos(n), words).unwrap_or(anchor),
        None => src
            .find_before(anchor, words)
            .or_else(|| src.find_after(table_at, words))
            .unwrap_or(anchor),
    };
    match con {
        TableConstraint::PrimaryKey {
            name,
            index_name,
            index_type,
            columns,
            index_options,
            characteristics,
        } => {
            let p = kw(name, &["PRIMARY", "KEY"]);
            key_clauses(
                src,
                p,
                index_name,
                index_type.is_some(),
                index_options,
                characteristics,
            )?;
            if keys.pk.is_some() {
                return Err(err(p, "more than one PRIMARY KEY"));
            }
            keys.pk = Some((index_columns(src, columns)?, p));
        }
        TableConstraint::Unique {
            name,
            index_name,
            index_type_display: _,
            index_type,
            columns,
            index_options,
            characteristics,
            nulls_distinct,
        } => {
            let p = kw(name, &["UNIQUE"]);
            key_clauses(
                src,
                p,
                &None,
                index_type.is_some(),
                index_options,
                characteristics,
            )?;
            if *nulls_distinct == NullsDistinctOption::NotDistinct {
                return Err(refuse(
                    src,
                    p,
                    &["NULLS", "NOT", "DISTINCT"],
                    "NULLS NOT DISTINCT",
                    "a unique index exempts rows with a NULL",
                ));
            }
            let iname = name.as_ref().or(index_name.as_ref()).map(ident_name);
            keys.unique.push((iname, index_columns(src, columns)?, p));
        }
        TableConstraint::Index {
            display_as_key: _,
            name,
            index_type,
            columns,
            index_options,
        } => {
            let p = src
                .find_before(anchor, &["INDEX"])
                .or_else(|| src.find_before(anchor, &["KEY"]))
                .unwrap_or(anchor);
            key_clauses(src, p, &None, index_type.is_some(), index_options, &None)?;
            keys.plain.push((
                name.as_ref().map(ident_name),
                index_columns(src, columns)?,
                p,
            ));
        }
        TableConstraint::ForeignKey { name, .. } => {
            let p = kw(name, &["FOREIGN", "KEY"]);
            return Err(err(
                p,
                "FOREIGN KEY is not supported (foreign keys are not checked)",
            ));
        }
        TableConstraint::Check { name, .. } => {
            let p = kw(name, &["CHECK"]);
            return Err(err(p, "CHECK is not supported (no CHECK constraints)"));
        }
        TableConstraint::FulltextOrSpatial { fulltext, .. } => {
            let w = if *fulltext { "FULLTEXT" } else { "SPATIAL" };
            let p = src.find_before(anchor, &[w]).unwrap_or(anchor);
            return Err(err(
                p,
                format!("{w} is not supported (every index is an ordered key range)"),
            ));
        }
    }
    Ok(())
}

/// The clauses a PRIMARY KEY / UNIQUE / INDEX constraint may carry that have no meaning here.
pub(super) fn key_clauses(
    src: &Source,
    at: Pos,
    index_name: &Option<Ident>,
    using: bool,
    options: &[sqlparser::ast::IndexOption],
    characteristics: &Option<sqlparser::ast::ConstraintCharacteristics>,
) -> Result<(), SchemaError> {
    if let Some(n) = index_name {
        return Err(err(ident_pos(n), format!("an index name ({n}) on PRIMARY KEY is not supported (the primary key is the index `primary`)")));
    }
    if using {
        return Err(refuse_using(src, at));
    }
    if let Some(o) = options.first() {
        let text = o.to_string();
        let first = text.split_whitespace().next().unwrap_or("");
        return Err(refuse(
            src,
            at,
            &[first],
            &format!("index option {text}"),
            "indexes take no options",
        ));
    }
    if let Some(ch) = characteristics {
        let text = ch.to_string();
        let first = text.split_whitespace().next().unwrap_or("");
        return Err(refuse(
            src,
            at,
            &[first],
            &text,
            "constraints are checked at once, always",
        ));
    }
    Ok(())
}
