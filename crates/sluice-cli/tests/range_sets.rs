//! `sluice ingest` takes one range's set of a distributed import's `output="files"`: the
//! bundled penguins, built as 3 ranges an index by the distributed core, each set ingested
//! alone (with the catalog entry) by the command into a fresh Db, holds exactly that key range
//! of what `sluice import` makes, and `sluice scan` reads the table back.

mod common;

use common::*;
use sluice::ReadOptions;
use sluice_import::distributed::{build_range, export_ranges, FromPrimary, JobPlan};
use sluice_import::{open_db, OnDuplicate};

fn dump(path: &std::path::Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = open_db(path, false).unwrap();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut v = Vec::new();
    while it.valid() {
        v.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    v
}

#[test]
fn one_range_set_ingests_alone() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    import_penguins(one.to_str().unwrap());
    let ex = root().join("examples");
    let schema = std::fs::read_to_string(ex.join("penguins.sql")).unwrap();
    let csv = ex.join("penguins.csv");
    let empty = open_db(dir.path().join("empty"), true).unwrap();
    let sources = vec![csv.display().to_string()];
    let mut plan = JobPlan::new(&empty, &schema, None, OnDuplicate::Error, "p", sources).unwrap();
    plan.text.header = true;
    plan.text.null = Some("NA".into());
    let (encoded, _) = plan.encode_file(&csv, 0).unwrap();
    let mut samples = vec![Vec::new(); plan.slots()];
    for b in &encoded {
        use arrow_array::cast::AsArray;
        let slots = b.column(0).as_primitive::<arrow_array::types::UInt32Type>();
        let keys = b.column(2).as_binary::<i32>();
        for i in 0..b.num_rows() {
            samples[slots.value(i) as usize].push(keys.value(i).to_vec());
        }
    }
    plan.set_cuts(samples, 3);
    let work = dir.path().join("work");
    let mut manifests = Vec::new();
    for slot in 0..plan.slots() {
        let from = FromPrimary::of(&manifests);
        for range in 0..plan.ranges(slot) {
            manifests.push(build_range(&plan, slot, range, &encoded, &from, &work, "a").unwrap());
        }
    }
    let out = dir.path().join("out");
    let sets = export_ranges(&plan, manifests, &work, &out).unwrap();
    let whole = dump(&one);
    let catalog = out.join(sets.catalog.as_deref().unwrap());
    for set in &sets.ranges {
        let db = dir.path().join(format!("s{}-r{}", set.slot, set.range));
        let mut args = vec![
            "ingest".to_string(),
            "--db".into(),
            db.display().to_string(),
        ];
        args.extend(
            set.files
                .iter()
                .map(|f| out.join(&f.path).display().to_string()),
        );
        args.push(catalog.display().to_string());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&argv, b"");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let hex = |h: &Option<String>| h.as_deref().map(|h| hex::decode(h).unwrap());
        let (lower, upper) = (hex(&set.lower), hex(&set.upper));
        let prefix = &hex::decode(&set.files[0].smallest).unwrap()[..8];
        let got = dump(&db);
        let want: Vec<_> = whole
            .iter()
            .filter(|(k, _)| {
                k.starts_with(prefix)
                    && lower.as_ref().is_none_or(|l| k >= l)
                    && upper.as_ref().is_none_or(|u| k < u)
            })
            .cloned()
            .collect();
        assert!(!want.is_empty());
        // The range's entries, and the catalog entry.
        assert_eq!(got.len(), want.len() + 1, "s{}-r{}", set.slot, set.range);
        assert!(want.iter().all(|kv| got.contains(kv)));
        if set.slot == 0 {
            let o = run(
                &[
                    "scan",
                    "--db",
                    db.to_str().unwrap(),
                    "--table",
                    "penguins",
                    "--count",
                ],
                b"",
            );
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["rows"], want.len(), "{v}");
        }
    }
}
