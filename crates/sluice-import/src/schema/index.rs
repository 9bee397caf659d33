//! Index columns and `CREATE [UNIQUE] INDEX`.

use sqlparser::ast::{CreateIndex, Expr, IndexColumn, OrderByExpr, OrderByOptions, Spanned};

use super::source::{err, ident_name, ident_pos, object_name, refuse, refuse_before, Pos, Source};
use super::{IndexDef, SchemaError, TableDef, PRIMARY_INDEX_ID};

/// The columns of a key or index: plain column names, ascending, NULLs first (the order keys
/// have); anything else is refused where it is written.
pub(super) fn index_columns(
    src: &Source,
    cols: &[IndexColumn],
) -> Result<Vec<(String, Pos)>, SchemaError> {
    let mut out = Vec::new();
    for c in cols {
        let IndexColumn {
            column:
                OrderByExpr {
                    expr,
                    options: OrderByOptions { asc, nulls_first },
                    with_fill,
                },
            operator_class,
        } = c;
        let Expr::Identifier(i) = expr else {
            return Err(err(
                expr.span().start.into(),
                format!(
                    "key column {expr}: only plain column names are supported (no expressions)"
                ),
            ));
        };
        let at = ident_pos(i);
        if *asc == Some(false) {
            return Err(refuse(
                src,
                at,
                &["DESC"],
                "DESC",
                "keys and indexes are ascending",
            ));
        }
        if *nulls_first == Some(false) {
            return Err(refuse(
                src,
                at,
                &["NULLS", "LAST"],
                "NULLS LAST",
                "NULL sorts first in keys",
            ));
        }
        if with_fill.is_some() {
            return Err(refuse(
                src,
                at,
                &["WITH", "FILL"],
                "WITH FILL",
                "not an index clause here",
            ));
        }
        if let Some(op) = operator_class {
            return Err(err(
                ident_pos(op),
                format!(
                    "operator class {op} is not supported (keys compare by their type's order)"
                ),
            ));
        }
        out.push((ident_name(i), at));
    }
    Ok(out)
}

/// Positions of `cols` in `t`, compared exactly (SQL references, after folding).
pub(super) fn resolve(
    t: &TableDef,
    cols: &[(String, Pos)],
    what: &str,
) -> Result<Vec<usize>, SchemaError> {
    let mut out = Vec::new();
    for (name, at) in cols {
        let i = match t.columns.iter().position(|c| &c.name == name && !c.hidden) {
            Some(i) => i,
            None => {
                let near = t.column(name).map_or(String::new(), |i| {
                    format!(
                        " (column {} differs in case: unquoted names fold to lower case, quote a name to keep its case)",
                        t.columns[i].name
                    )
                });
                return Err(err(
                    *at,
                    format!("{what}: table {} has no column {name}{near}", t.name),
                ));
            }
        };
        if out.contains(&i) {
            return Err(err(*at, format!("{what}: column {name} listed twice")));
        }
        out.push(i);
    }
    Ok(out)
}

pub(super) fn add_index(
    t: &mut TableDef,
    name: String,
    columns: Vec<usize>,
    unique: bool,
    at: Pos,
) -> Result<(), SchemaError> {
    if name.eq_ignore_ascii_case("primary") || t.index(&name).is_some() {
        return Err(err(
            at,
            format!("index name {name} is already used (index names are matched ignoring case)"),
        ));
    }
    if columns.is_empty() {
        return Err(err(at, format!("index {name} has no columns")));
    }
    let id = PRIMARY_INDEX_ID + 1 + t.indexes.len() as u32;
    t.indexes.push(IndexDef {
        name,
        id,
        columns,
        unique,
    });
    Ok(())
}

/// `CREATE [UNIQUE] INDEX [name] ON t (cols)`; every other clause refused.
pub(super) fn create_index(
    src: &Source,
    ci: &CreateIndex,
    stmt: Pos,
    tables: &mut [TableDef],
) -> Result<(), SchemaError> {
    let CreateIndex {
        name,
        table_name,
        using,
        columns,
        unique,
        concurrently,
        if_not_exists,
        include,
        nulls_distinct,
        with,
        predicate,
        index_options,
        alter_options,
    } = ci;
    let (table, at) = object_name(table_name, stmt)?;
    let index_name = name.as_ref().map(|n| object_name(n, at)).transpose()?;
    if *concurrently {
        return Err(refuse_before(
            src,
            at,
            &["CONCURRENTLY"],
            "CONCURRENTLY",
            "an import builds its indexes with the table",
        ));
    }
    if *if_not_exists {
        return Err(refuse_before(
            src,
            at,
            &["IF", "NOT", "EXISTS"],
            "IF NOT EXISTS",
            "an index is created with its table, or checked to be the same",
        ));
    }
    if using.is_some() {
        return Err(refuse_using(src, at));
    }
    if !include.is_empty() {
        return Err(refuse(
            src,
            at,
            &["INCLUDE"],
            "INCLUDE",
            "an index entry holds its columns and the primary key only",
        ));
    }
    if *nulls_distinct == Some(false) {
        return Err(refuse(
            src,
            at,
            &["NULLS", "NOT", "DISTINCT"],
            "NULLS NOT DISTINCT",
            "a unique index exempts rows with a NULL",
        ));
    }
    if !with.is_empty() {
        return Err(refuse(
            src,
            at,
            &["WITH"],
            "WITH (…) on an index",
            "indexes take no options",
        ));
    }
    if let Some(p) = predicate {
        let where_at = src
            .find_before(p.span().start.into(), &["WHERE"])
            .unwrap_or_else(|| src.find_after(at, &["WHERE"]).unwrap_or(at));
        return Err(err(
            where_at,
            "WHERE (a partial index) is not supported (an index holds every row)",
        ));
    }
    if let Some(o) = index_options.first() {
        return Err(err(
            src.after_parens(at),
            format!("index option {o} is not supported"),
        ));
    }
    if let Some(o) = alter_options.first() {
        return Err(err(
            src.after_parens(at),
            format!("index clause {o} is not supported"),
        ));
    }
    let t = match tables.iter().position(|t| t.name == table) {
        Some(i) => &mut tables[i],
        None => {
            let near = tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&table))
                .map_or(String::new(), |t| {
                    format!(
                        " (table {} differs in case: unquoted names fold to lower case)",
                        t.name
                    )
                });
            return Err(err(
                at,
                format!("CREATE INDEX on {table}: no such table (create it first){near}"),
            ));
        }
    };
    let (iname, iat) = match index_name {
        Some((n, p)) => (n, p),
        None => (format!("{}_idx{}", t.name, t.indexes.len() + 1), at),
    };
    let cols = resolve(t, &index_columns(src, columns)?, &format!("index {iname}"))?;
    add_index(t, iname, cols, *unique, iat)
}

/// `USING method` on an index or key: refused (every index is an ordered key range).
pub(super) fn refuse_using(src: &Source, at: Pos) -> SchemaError {
    refuse(
        src,
        at,
        &["USING"],
        "USING",
        "every index is an ordered key range",
    )
}
