//! The columnar layout (column chunks) against the row layout: random tables imported into
//! both, with rows deleted and added, read back identically through every read path; corrupt
//! chunks are errors that name them, never panics.

mod common;

use common::*;
use proptest::prelude::*;
use sluice_import::{open_db, ImportOptions, OnDuplicate, OutputFormat, TableReader};

/// Column types of the random tables, with a CSV text for a value drawn from `n`.
const TYPES: [&str; 9] = [
    "SMALLINT",
    "INT",
    "BIGINT",
    "DOUBLE",
    "DECIMAL(12,3)",
    "BOOLEAN",
    "TEXT",
    "DATE",
    "TIMESTAMP",
];

fn text_of(ty: &str, n: u64) -> String {
    let i = n as i64;
    match ty {
        "SMALLINT" => (i % 30000).to_string(),
        "INT" => (i % 2_000_000_000 - 1_000_000_000).to_string(),
        "BIGINT" => (i.wrapping_mul(7_919) - (1 << 40)).to_string(),
        "DOUBLE" => format!("{}", (i % 100_000) as f64 / 7.0 - 5000.0),
        "DECIMAL(12,3)" => format!("{}.{:03}", i % 1_000_000_000 - 500_000_000, n % 1000),
        "BOOLEAN" => n.is_multiple_of(2).to_string(),
        "TEXT" => {
            // Short, long, empty, with commas, quotes and newlines (CSV-quoted).
            let s = match n % 5 {
                0 => String::new(),
                1 => format!("v{}", n % 17),
                2 => "x,\"y\"\nz".repeat((n % 4) as usize),
                3 => "long ".repeat(50 + (n % 50) as usize),
                _ => format!("ünï {n}"),
            };
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        "DATE" => format!("{}-{:02}-{:02}", 1900 + n % 200, 1 + n % 12, 1 + n % 28),
        "TIMESTAMP" => format!(
            "{}-{:02}-{:02} {:02}:{:02}:{:02}",
            1970 + n % 100,
            1 + n % 12,
            1 + n % 28,
            n % 24,
            n % 60,
            (n / 7) % 60
        ),
        _ => unreachable!(),
    }
}

/// A random table: `(type index, NOT NULL, NULL one row in k)` per non-key column.
type Cols = Vec<(usize, bool, u64)>;

fn schema(layout: &str, cols: &Cols) -> String {
    let mut s = String::from("CREATE TABLE r (id BIGINT PRIMARY KEY");
    for (i, (t, nn, _)) in cols.iter().enumerate() {
        s.push_str(&format!(
            ", c{i} {}{}",
            TYPES[*t],
            if *nn { " NOT NULL" } else { "" }
        ));
    }
    s.push_str(&format!(") WITH (layout = '{layout}');"));
    s
}

fn csv(cols: &Cols, ids: &[u64], seed: u64) -> Vec<u8> {
    let mut out = String::new();
    for &id in ids {
        out.push_str(&id.to_string());
        for (i, (t, nn, k)) in cols.iter().enumerate() {
            out.push(',');
            let n = id.wrapping_mul(0x9E37_79B9).wrapping_add(seed + i as u64) >> 3;
            if !*nn && n.is_multiple_of(*k) {
                out.push_str("NA");
            } else {
                out.push_str(&text_of(TYPES[*t], n));
            }
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// Everything a reader can say about table r: rows in key order (CSV and JSON), a point read
/// of each id in `probe`, the count and sum of every numeric column, and each column's values
/// read alone in any order (sorted).
fn read_all(db: &sluice::Db, cols: &Cols, probe: &[u64]) -> Vec<String> {
    let mut out = rows(db, "r", None);
    out.extend(json_rows(db, "r"));
    let mut r = TableReader::open(db, Some("r")).unwrap();
    for id in probe {
        let got = r.get(&[id.to_string()]).unwrap();
        out.push(format!(
            "{:?}",
            got.map(|g| r.format_row(&g, OutputFormat::Json))
        ));
    }
    // A count and sum with a limit: the first rows in key order, whatever the storage order.
    let cs = r.count_sum(None, None, None, Some(10), Some(0)).unwrap();
    out.push(format!(
        "limit {} {:?}",
        cs.rows,
        cs.sum.map(|s| s.to_json())
    ));
    for c in 0..=cols.len() {
        // Exact sums only: a DOUBLE sum depends on the order rows are added in, and a
        // columnar count or sum goes in storage order.
        if c == 0 || matches!(cols[c - 1].0, 0 | 1 | 2 | 4) {
            let cs = r.count_sum(None, None, None, None, Some(c)).unwrap();
            out.push(format!("{} {:?}", cs.rows, cs.sum.map(|s| s.to_json())));
        }
        let name = if c == 0 {
            "id".to_string()
        } else {
            format!("c{}", c - 1)
        };
        r.set_columns(Some(&[name])).unwrap();
        r.set_any_order(true);
        let mut vals = Vec::new();
        r.scan(None, None, None, None, |row| {
            vals.push(r.format_row(row, OutputFormat::Csv));
            Ok(())
        })
        .unwrap();
        vals.sort();
        out.extend(vals);
    }
    out
}

fn load(
    db: &sluice::Db,
    layout: &str,
    cols: &Cols,
    file: std::path::PathBuf,
) -> sluice_import::Summary {
    import(
        db,
        &schema(layout, cols),
        vec![file],
        ImportOptions {
            null: Some("NA".into()),
            ..opts()
        },
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_tables_read_back_the_same_in_every_layout(
        cols in proptest::collection::vec((0..TYPES.len(), any::<bool>(), 1u64..6), 1..7),
        ids in proptest::collection::btree_set(0u64..1_000_000, 1..5000),
        more in proptest::collection::btree_set(1_000_000u64..2_000_000, 0..300),
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        // The input in no key order; a second import adds rows after the first's.
        let mut ids: Vec<u64> = ids.into_iter().collect();
        ids.reverse();
        let first = write(dir.path(), "a.csv", &csv(&cols, &ids, seed));
        let more: Vec<u64> = more.into_iter().collect();
        let second = write(dir.path(), "b.csv", &csv(&cols, &more, seed));
        let again: Vec<u64> = ids.iter().step_by(7).copied().collect();
        let replace = write(dir.path(), "c.csv", &csv(&cols, &again, seed ^ 0x5555));
        let probe: Vec<u64> = ids.iter().step_by(97).copied().chain([u64::MAX / 2]).collect();
        let mut seen = Vec::new();
        for layout in ["row", "columnar", "cells"] {
            let db = open_db(dir.path().join(layout), true).unwrap();
            load(&db, layout, &cols, first.clone());
            let once = read_all(&db, &cols, &probe);
            // Delete every 13th row (and one that is not there), then add the second import.
            let r = TableReader::open(&db, Some("r")).unwrap();
            for id in ids.iter().step_by(13).chain([&3_000_000]) {
                let was = r.delete(&[id.to_string()], false).unwrap();
                prop_assert_eq!(was, *id != 3_000_000);
            }
            let deleted = read_all(&db, &cols, &probe);
            if !more.is_empty() {
                load(&db, layout, &cols, second.clone());
            }
            let added = read_all(&db, &cols, &probe);
            // Replace every 7th first-import row with other values (`--on-duplicate last`;
            // refused for cells tables holding rows). A columnar import then rewrites the
            // groups a tenth dead (about a fifth of each is: the deletes and these).
            let r = import(
                &db,
                &schema(layout, &cols),
                vec![replace.clone()],
                ImportOptions {
                    null: Some("NA".into()),
                    on_duplicate: OnDuplicate::Last,
                    rewrite_dead: Some(0.1),
                    ..opts()
                },
            );
            let replaced = match (layout, r) {
                ("cells", Err(e)) => {
                    prop_assert!(e.to_string().contains("not supported yet"), "{}", e);
                    None
                }
                (_, r) => {
                    r.unwrap();
                    Some(read_all(&db, &cols, &probe))
                }
            };
            if layout == "columnar" {
                // Rewriting every group with a deletion mark changes no row, and leaves no
                // group to rewrite (but a highest group with no live row, which stays).
                let r = TableReader::open(&db, Some("r")).unwrap();
                let s = r.rewrite_groups(1e-9, false).unwrap();
                let after = read_all(&db, &cols, &probe);
                prop_assert!(Some(&after) == replaced.as_ref(), "{:?}", s);
                prop_assert_eq!(r.rewrite_groups(1e-9, false).unwrap().groups_rewritten, 0);
            }
            seen.push((once, deleted, added, replaced));
        }
        let none = Vec::new();
        let (r3, c3) = (seen[0].3.as_ref().unwrap_or(&none), seen[1].3.as_ref().unwrap_or(&none));
        prop_assert!(seen[0].0.len() > seen[0].1.len() || ids.len() < 13);
        for (row, col) in (1..3)
            .flat_map(|i| {
                [(&seen[0].0, &seen[i].0), (&seen[0].1, &seen[i].1), (&seen[0].2, &seen[i].2)]
            })
            .chain([(r3, c3)])
        {
            let first = row.iter().zip(col).position(|(a, b)| a != b);
            prop_assert!(
                first.is_none() && row.len() == col.len(),
                "row layout {} lines, other layout {}; first difference at {:?}: {:?} vs {:?}",
                row.len(),
                col.len(),
                first,
                first.map(|i| &row[i]),
                first.map(|i| &col[i])
            );
        }
    }
}

#[test]
fn a_chunk_that_does_not_decode_is_named_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let cols: Cols = vec![(1, false, 3), (6, false, 4)];
    let ids: Vec<u64> = (0..100).collect();
    load(
        &db,
        "columnar",
        &cols,
        write(dir.path(), "a.csv", &csv(&cols, &ids, 1)),
    );
    let t = TableReader::open(&db, Some("r")).unwrap().table;
    // Column c1's chunk of group 0, overwritten with bytes that are not a chunk, then with a
    // chunk of the wrong row count.
    let mut key = Vec::new();
    sluice_import::chunk::chunk_key(&t, 2, 0, &mut key);
    let good = db.get(&key).unwrap().unwrap();
    for bad in [
        b"\x01\xff\xff\xff".to_vec(),
        good[..good.len() / 2].to_vec(),
    ] {
        db.put(&key, &bad).unwrap();
        let mut r = TableReader::open(&db, Some("r")).unwrap();
        let e = r.get(&["5".into()]).unwrap_err().to_string();
        assert!(e.contains("table r, column c1, row group 0: chunk"), "{e}");
        let e = r
            .scan(None, None, None, None, |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("column c1, row group 0"), "{e}");
        r.set_columns(Some(&["c1".into()])).unwrap();
        r.set_any_order(true);
        let e = r
            .scan(None, None, None, None, |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("column c1, row group 0"), "{e}");
    }
    // A group whose chunk of one column is missing.
    db.delete(&key).unwrap();
    let mut r = TableReader::open(&db, Some("r")).unwrap();
    r.set_columns(Some(&["c0".into(), "c1".into()])).unwrap();
    r.set_any_order(true);
    let e = r
        .scan(None, None, None, None, |_| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
    db.put(&key, &good).unwrap();
    r.set_columns(None).unwrap();
    assert_eq!(r.scan(None, None, None, None, |_| Ok(())).unwrap(), 100);
}

#[test]
fn corrupt_chunk_file_bytes_are_named_by_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let cols: Cols = vec![(6, true, 1)];
    let ids: Vec<u64> = (0..3000).collect();
    {
        let db = open_db(&path, true).unwrap();
        load(
            &db,
            "columnar",
            &cols,
            write(dir.path(), "a.csv", &csv(&cols, &ids, 2)),
        );
    }
    // Flip bytes in the middle of the biggest table file (the primary index or the chunks):
    // a scan in key order reads both.
    let sst = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    let mid = bytes.len() / 3;
    for b in &mut bytes[mid..mid + 16] {
        *b ^= 0x5a;
    }
    std::fs::write(&sst, &bytes).unwrap();
    let db = open_db(&path, true).unwrap();
    let r = TableReader::open(&db, Some("r")).unwrap();
    let e = r
        .scan(None, None, None, None, |_| Ok(()))
        .unwrap_err()
        .to_string();
    let name = sst.file_name().unwrap().to_string_lossy().to_string();
    assert!(e.contains(&name) && e.contains("offset"), "{e}");
}

#[test]
fn chunks_that_compress_far_better_than_64_to_1_read_back() {
    // One long constant TEXT value in every row: zstd makes a group's 130 KB of values into a
    // few dozen bytes.
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let mut csv = String::new();
    for i in 0..5000 {
        csv.push_str(&format!("{i},the same thirty-two byte value!!\n"));
    }
    let f = write(dir.path(), "c.csv", csv.as_bytes());
    let schema = "CREATE TABLE r (id BIGINT PRIMARY KEY, s TEXT) WITH (layout = 'columnar');";
    import(&db, schema, vec![f], opts()).unwrap();
    let r = TableReader::open(&db, Some("r")).unwrap();
    let got = r.get(&["4321".into()]).unwrap().unwrap();
    assert_eq!(
        r.format_row(&got, OutputFormat::Csv),
        "4321,the same thirty-two byte value!!"
    );
    assert_eq!(r.scan(None, None, None, None, |_| Ok(())).unwrap(), 5000);
}

#[test]
fn imports_of_one_table_never_share_group_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let cols: Cols = vec![(2, true, 1)];
    let schema = schema("columnar", &cols);
    let ids: Vec<u64> = (0..10).collect();
    import(
        &db,
        &schema,
        vec![write(dir.path(), "a.csv", &csv(&cols, &ids, 1))],
        opts(),
    )
    .unwrap();
    let t = TableReader::open(&db, Some("r")).unwrap().table;
    // Two imports reserving before either has stored a group get disjoint blocks.
    let a = sluice_import::chunk::reserve_group_ids(&db, &t, 0).unwrap();
    let b = sluice_import::chunk::reserve_group_ids(&db, &t, 0).unwrap();
    let (sa, sb) = (a.start, b.start);
    assert!(
        sa >= 1 && sb >= sa + sluice_import::chunk::IDS_PER_IMPORT,
        "{sa} {sb}"
    );
    // Released, the ids are free again for the next import.
    drop((a, b));
    let c = sluice_import::chunk::reserve_group_ids(&db, &t, 0).unwrap();
    assert_eq!(c.start, sa);
    drop(c);
    // Imports running at once, into one table, each with its own keys: every row reads back
    // as written.
    let files: Vec<_> = (0..3u64)
        .map(|k| {
            let ids: Vec<u64> = (0..20_000).map(|i| 1000 + i * 3 + k).collect();
            write(dir.path(), &format!("p{k}.csv"), &csv(&cols, &ids, 7))
        })
        .collect();
    std::thread::scope(|s| {
        for f in &files {
            let (db, schema) = (&db, &schema);
            s.spawn(move || import(db, schema, vec![f.clone()], opts()).unwrap());
        }
    });
    let all: Vec<u64> = (0..10).chain(1000..61_000).collect();
    let want = csv(&cols, &all, 7);
    let row_db = open_db(dir.path().join("row"), true).unwrap();
    let first: Vec<u64> = (0..10).collect();
    let mut body = csv(&cols, &first, 1);
    body.extend_from_slice(&want[csv(&cols, &first, 7).len()..]);
    let row_schema = self::schema("row", &cols);
    import(
        &row_db,
        &row_schema,
        vec![write(dir.path(), "all.csv", &body)],
        opts(),
    )
    .unwrap();
    assert_eq!(
        read_all(&db, &cols, &[5, 1000, 30_001]),
        read_all(&row_db, &cols, &[5, 1000, 30_001])
    );
}

#[test]
fn chunks_split_across_files_by_a_compaction_read_back() {
    // Small target files: a compaction of the table cuts its column chunks, primary entries
    // and deletion marks into many files; every read path still agrees with the row layout.
    let dir = tempfile::tempdir().unwrap();
    let cols: Cols = vec![(6, false, 5), (2, true, 1), (3, false, 3)];
    let ids: Vec<u64> = (0..12_000).rev().collect();
    let f = write(dir.path(), "a.csv", &csv(&cols, &ids, 9));
    let probe = [0, 4095, 4096, 11_999];
    let mut seen = Vec::new();
    for layout in ["row", "columnar"] {
        let db = sluice_import::open_db_with(dir.path().join(layout), true, |o| {
            o.target_file_size = 16 << 10;
        })
        .unwrap();
        load(&db, layout, &cols, f.clone());
        let r = TableReader::open(&db, Some("r")).unwrap();
        for id in (0..12_000).step_by(11) {
            r.delete(&[id.to_string()], false).unwrap();
        }
        let before = read_all(&db, &cols, &probe);
        db.compact_range(None, None).unwrap();
        let files = std::fs::read_dir(dir.path().join(layout))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "sst")
            })
            .count();
        assert!(files > 4, "{layout}: {files} table files");
        assert_eq!(read_all(&db, &cols, &probe), before, "{layout}");
        seen.push(before);
    }
    assert_eq!(seen[0], seen[1]);
}

/// Deletion marks of table `t` per row group.
fn marks(db: &sluice::Db, t: &sluice_import::TableDef) -> std::collections::BTreeMap<u64, u64> {
    let p = sluice_import::keycode::prefix(t.id, sluice_import::query::DEAD_INDEX_ID);
    let mut it = db
        .iter(sluice::ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: sluice_import::keycode::prefix_successor(&p),
            ..Default::default()
        })
        .unwrap();
    it.seek_to_first();
    let mut m = std::collections::BTreeMap::new();
    while it.valid() {
        let (g, _) = sluice_import::query::dead_mark(it.key()).unwrap();
        *m.entry(g).or_insert(0) += 1;
        it.next();
    }
    m
}

#[test]
fn a_rewrite_gives_back_a_mostly_deleted_groups_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cols: Cols = vec![(6, false, 5), (1, true, 1), (4, false, 3)];
    // Four groups in key order: ids 0..4096, ..8192, ..12288, and 100 more.
    let ids: Vec<u64> = (0..12_388).rev().collect();
    let f = write(dir.path(), "a.csv", &csv(&cols, &ids, 3));
    let indexed =
        |layout: &str| schema(layout, &cols).replace(";", "; CREATE INDEX by_c1 ON r (c1);");
    let probe = [0, 4, 5, 4095, 4096, 5000, 12_387];
    let mut seen = Vec::new();
    for layout in ["row", "columnar"] {
        let db = open_db(dir.path().join(layout), true).unwrap();
        let o = ImportOptions {
            null: Some("NA".into()),
            ..opts()
        };
        import(&db, &indexed(layout), vec![f.clone()], o.clone()).unwrap();
        let r = TableReader::open(&db, Some("r")).unwrap();
        // Three in four rows of the first group, one in ten of the second.
        for id in (0..4096)
            .filter(|i| i % 4 != 0)
            .chain((4096..8192).step_by(10))
        {
            assert!(r.delete(&[id.to_string()], false).unwrap());
        }
        // And one row of the first group replaced (`last`): its old position is marked too.
        let again = write(dir.path(), "b.csv", &csv(&cols, &[8], 99));
        let last = ImportOptions {
            on_duplicate: OnDuplicate::Last,
            rewrite_dead: None,
            ..o
        };
        import(&db, &indexed(layout), vec![again], last).unwrap();
        let mut before = read_all(&db, &cols, &probe);
        before.extend(rows(&db, "r", Some("by_c1")));
        if layout == "columnar" {
            let t = r.table.clone();
            let m = marks(&db, &t);
            assert_eq!(m.get(&0), Some(&(3072 + 1)));
            let top = sluice_import::chunk::next_group_id(&db, &t).unwrap();
            let s = r.rewrite_groups(0.5, false).unwrap();
            // Group 0 (3,073 of 4,096 dead) goes; group 1 (410 dead) stays.
            assert_eq!(
                (s.groups_with_marks, s.groups_rewritten, s.groups_written),
                (2, 1, 1)
            );
            assert_eq!((s.rows_moved, s.rows_dropped), (1023, 3073));
            assert!(s.bytes_after * 3 < s.bytes_before, "{s:?}");
            let mut k = Vec::new();
            for c in 0..t.columns.len() {
                sluice_import::chunk::chunk_key(&t, c, 0, &mut k);
                assert_eq!(db.get(&k).unwrap(), None, "column {c}'s old chunk");
                sluice_import::chunk::chunk_key(&t, c, top, &mut k);
                assert!(db.get(&k).unwrap().is_some(), "column {c}'s new chunk");
            }
            let m = marks(&db, &t);
            assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![1]);
            assert_eq!(
                sluice_import::chunk::next_group_id(&db, &t).unwrap(),
                top + 1
            );
        }
        let mut after = read_all(&db, &cols, &probe);
        after.extend(rows(&db, "r", Some("by_c1")));
        assert_eq!(after, before, "{layout}");
        seen.push(after);
    }
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn a_replacing_import_rewrites_the_groups_it_leaves_mostly_dead() {
    // Two groups (ids 0..4096, 4096..8192), then an `--on-duplicate last` import of ids
    // 0..3000 and 5000..5100: group 0 is 3,000 of 4,096 dead, group 1 100.
    let dir = tempfile::tempdir().unwrap();
    let cols: Cols = vec![(6, false, 3), (2, true, 1)];
    let ids: Vec<u64> = (0..8192).collect();
    let f = write(dir.path(), "a.csv", &csv(&cols, &ids, 1));
    let again: Vec<u64> = (0..3000).chain(5000..5100).collect();
    let g = write(dir.path(), "b.csv", &csv(&cols, &again, 2));
    let probe = [0, 2999, 3000, 4095, 4096, 5000, 8191];
    let last = |rewrite_dead| ImportOptions {
        null: Some("NA".into()),
        on_duplicate: OnDuplicate::Last,
        rewrite_dead,
        ..opts()
    };
    let mut seen = Vec::new();
    for (name, layout, rewrite_dead) in [
        ("row", "row", Some(0.5)),
        ("auto", "columnar", Some(0.5)),
        ("high", "columnar", Some(0.8)),
        ("off", "columnar", None),
    ] {
        let db = open_db(dir.path().join(name), true).unwrap();
        // The import that creates the table rewrites nothing.
        let s = import(
            &db,
            &schema(layout, &cols),
            vec![f.clone()],
            last(Some(0.5)),
        )
        .unwrap();
        assert_eq!(s.rewrite, None, "{name}");
        let s = import(
            &db,
            &schema(layout, &cols),
            vec![g.clone()],
            last(rewrite_dead),
        )
        .unwrap();
        assert_eq!(s.rewrite_error, None, "{name}");
        let t = TableReader::open(&db, Some("r")).unwrap().table;
        let m = marks(&db, &t);
        match name {
            "row" | "off" => assert_eq!(s.rewrite, None, "{name}"),
            "auto" => {
                let r = s.rewrite.unwrap();
                assert_eq!(
                    (r.groups_with_marks, r.groups_rewritten, r.groups_written),
                    (2, 1, 1)
                );
                assert_eq!((r.rows_moved, r.rows_dropped), (1096, 3000));
                assert_eq!(m, [(1, 100)].into());
            }
            _ => {
                let r = s.rewrite.unwrap();
                assert_eq!((r.groups_with_marks, r.groups_rewritten), (2, 0));
            }
        }
        if matches!(name, "high" | "off") {
            assert_eq!(m, [(0, 3000), (1, 100)].into(), "{name}");
        }
        seen.push(read_all(&db, &cols, &probe));
    }
    assert!(seen.iter().all(|s| *s == seen[0]));
    // An import asked to yield (here nice 0) leaves the rewrite to an explicit call.
    let db = open_db(dir.path().join("nice"), true).unwrap();
    import(&db, &schema("columnar", &cols), vec![f.clone()], last(None)).unwrap();
    let nice = ImportOptions {
        nice: Some(0),
        ..last(Some(0.5))
    };
    let s = import(&db, &schema("columnar", &cols), vec![g.clone()], nice).unwrap();
    assert_eq!((s.rewrite, s.rewrite_error), (None, None));
    let t = TableReader::open(&db, Some("r")).unwrap().table;
    assert_eq!(marks(&db, &t), [(0, 3000), (1, 100)].into());
    // A share outside (0, 1] is refused before anything is read.
    let db = open_db(dir.path().join("bad"), true).unwrap();
    let e = import(&db, &schema("columnar", &cols), vec![f], last(Some(1.5))).unwrap_err();
    assert!(e.to_string().contains("rewrite_dead"), "{e}");
    assert!(TableReader::tables(&db).unwrap().is_empty());
}

#[test]
fn a_rewrite_is_refused_for_other_layouts_bad_shares_and_while_an_import_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cols: Cols = vec![(1, true, 1)];
    let ids: Vec<u64> = (0..100).collect();
    let f = write(dir.path(), "a.csv", &csv(&cols, &ids, 1));
    let row = open_db(dir.path().join("row"), true).unwrap();
    load(&row, "row", &cols, f.clone());
    let e = TableReader::open(&row, Some("r"))
        .unwrap()
        .rewrite_groups(0.5, false)
        .unwrap_err();
    assert!(e.to_string().contains("not columnar"), "{e}");
    let db = open_db(dir.path().join("col"), true).unwrap();
    load(&db, "columnar", &cols, f);
    let r = TableReader::open(&db, Some("r")).unwrap();
    for bad in [0.0, -1.0, 1.5, f64::NAN] {
        let e = r.rewrite_groups(bad, false).unwrap_err();
        assert!(e.to_string().contains("(0, 1]"), "{bad}: {e}");
    }
    let import = sluice_import::chunk::TableLatch::for_import(&db, &r.table);
    let e = r.rewrite_groups(0.5, false).unwrap_err();
    assert!(e.to_string().contains("import"), "{e}");
    drop(import);
    assert_eq!(r.rewrite_groups(0.5, false).unwrap().groups_with_marks, 0);
    // A primary entry that names no group is an error naming it, and nothing is rewritten.
    for id in 0..60 {
        assert!(r.delete(&[id.to_string()], false).unwrap());
    }
    let mut pk = sluice_import::keycode::prefix(r.table.id, 1);
    sluice_import::keycode::encode_value(&mut pk, &sluice_import::types::Value::Int(70));
    db.put(&pk, b"\x01").unwrap();
    let e = r.rewrite_groups(0.5, false).unwrap_err();
    assert!(e.to_string().contains("names no row group"), "{e}");
    assert_eq!(marks(&db, &r.table).values().sum::<u64>(), 60);
}

#[test]
fn a_rewrite_cuts_new_groups_by_bytes_too() {
    // Rows of about 1 MiB: the import's groups end with its 4 MiB row batches, and the
    // rewrite's new groups end at 8 MiB of cells, not at 4,096 rows.
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE r (id BIGINT PRIMARY KEY, big TEXT) WITH (layout = 'columnar');";
    let body: String = (0..24)
        .map(|i| {
            format!(
                "{i},{}\n",
                format!("{i:x}").repeat(1 << 20).get(..1 << 20).unwrap()
            )
        })
        .collect();
    let db = open_db(dir.path().join("db"), true).unwrap();
    import(
        &db,
        schema,
        vec![write(dir.path(), "a.csv", body.as_bytes())],
        opts(),
    )
    .unwrap();
    let r = TableReader::open(&db, Some("r")).unwrap();
    for id in (0..24).step_by(2) {
        assert!(r.delete(&[id.to_string()], false).unwrap());
    }
    let before = rows(&db, "r", None);
    // Every group with a mark (a group of one odd row has none).
    let s = r.rewrite_groups(0.01, false).unwrap();
    assert!(s.rows_moved >= 9, "{s:?}");
    assert!(s.groups_written >= 2, "9+ MiB of cells in one group: {s:?}");
    assert_eq!(rows(&db, "r", None), before);
}

#[test]
fn rewrites_beside_deletes_lose_no_row_and_bring_none_back() {
    // One thread deletes rows one by one in a scattered order while another rewrites the
    // groups again and again: at the end, exactly the rows not deleted are there, with their
    // values, through every read path (against the row layout with the same deletes).
    let dir = tempfile::tempdir().unwrap();
    let cols: Cols = vec![(6, false, 4), (2, true, 1)];
    let ids: Vec<u64> = (0..20_000).collect();
    let f = write(dir.path(), "a.csv", &csv(&cols, &ids, 5));
    let gone: Vec<u64> = (0..20_000u64)
        .map(|i| i.wrapping_mul(7919) % 20_000)
        .filter(|i| i % 5 != 0)
        .collect();
    let probe = [0, 1, 4095, 4096, 10_000, 19_999];
    let mut seen = Vec::new();
    for layout in ["row", "columnar"] {
        let db = open_db(dir.path().join(layout), true).unwrap();
        load(&db, layout, &cols, f.clone());
        // Set when the deletes are over, or have failed (the scope then panics).
        let done = std::sync::atomic::AtomicBool::new(false);
        let rewrites = std::thread::scope(|s| {
            let (db, gone, done) = (&db, &gone, &done);
            s.spawn(move || {
                let _done = SetOnDrop(done);
                let r = TableReader::open(db, Some("r")).unwrap();
                for id in gone {
                    assert!(r.delete(&[id.to_string()], false).unwrap(), "{id}");
                }
            });
            let over = || done.load(std::sync::atomic::Ordering::Acquire);
            let mut n = 0u64;
            if layout == "columnar" {
                // A second rewriter at another threshold: two rewrites of one table take
                // turns, and one skips the groups the other has already moved.
                let other = s.spawn(move || {
                    let r = TableReader::open(db, Some("r")).unwrap();
                    let mut n = 0;
                    while !over() {
                        n += r.rewrite_groups(0.35, false).unwrap().groups_rewritten;
                    }
                    n
                });
                let r = TableReader::open(db, Some("r")).unwrap();
                while !over() {
                    n += r.rewrite_groups(0.2, false).unwrap().groups_rewritten;
                }
                n += other.join().unwrap();
                n += r.rewrite_groups(0.2, false).unwrap().groups_rewritten;
            }
            n
        });
        if layout == "columnar" {
            assert!(rewrites > 0, "no group was rewritten");
        }
        seen.push(read_all(&db, &cols, &probe));
    }
    assert_eq!(seen[0], seen[1]);
}

/// Sets its flag when dropped, also when a panic unwinds.
struct SetOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Small appends into a columnar table add a small file per column each: the Db merges each
/// column's neighbouring small files at the bottom (`Options::small_file_merge_prefix`, which
/// `open_db` sets), never across columns, so every later append's files still go to the
/// bottom level unrewritten and nothing piles up above it; every row reads back as from the
/// row layout.
#[test]
fn small_appends_leave_a_few_files_per_column_and_none_above_the_bottom() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let row_db = open_db(dir.path().join("row"), true).unwrap();
    let cols: Cols = vec![(1, true, 1), (6, false, 3), (2, true, 1), (3, false, 2)];
    let appends = 40u64;
    let mut merges = 0;
    for a in 0..appends {
        let ids: Vec<u64> = (a * 5..a * 5 + 5).collect();
        let f = write(dir.path(), &format!("a{a}.csv"), &csv(&cols, &ids, 3));
        let s = load(&db, "columnar", &cols, f.clone());
        assert_eq!(s.small_file_merge_error, None);
        merges += s.small_file_merges;
        load(&row_db, "row", &cols, f);
    }
    // The summaries count the merges: each column's 8th append merges its first 8 files.
    assert!(merges >= cols.len(), "{merges} merges");
    db.wait_for_background_work().unwrap();
    let m = db.metrics();
    let files: Vec<usize> = m.levels.iter().map(|l| l.files).collect();
    // Each append ingests a file per column (and the primary index), plus the catalog entry.
    // Merged per column, 40 appends leave about log2(40 / 8) + 8 files per column at most.
    let per_column = appends as usize;
    assert!(
        files[6] < (cols.len() + 1) * per_column / 2,
        "bottom level holds {} files after {appends} appends: {files:?}",
        files[6]
    );
    // Above the bottom: only the catalog's re-ingested entries (each import writes the
    // table's entry again), never a file of the table's data.
    let id = TableReader::open(&db, Some("r"))
        .unwrap()
        .table
        .id
        .to_be_bytes();
    let v = db.current_version();
    for (level, files) in v.levels.iter().enumerate().take(6) {
        for f in files {
            assert!(
                !f.smallest_user().starts_with(&id) && !f.largest_user().starts_with(&id),
                "file {} of the table's data at L{level} ({} files there)",
                f.number,
                files.len()
            );
        }
    }
    assert_eq!(
        read_all(&db, &cols, &[0, 77, 199]),
        read_all(&row_db, &cols, &[0, 77, 199])
    );
}
