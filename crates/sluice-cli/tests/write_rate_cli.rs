//! `sluice import --write-rate SIZE`: a paced import gives the same Db contents as an unpaced
//! one, and a rate that is zero or not a size is refused, naming the option.

mod common;

use common::{import_penguins, penguins_import};

fn import_paced(db: &str, rate: &str) -> std::process::Output {
    penguins_import(db, &["--write-rate", rate])
}

fn scan(db: &str) -> Vec<u8> {
    common::scan(db, &["--table", "penguins"])
}

#[test]
fn a_paced_import_reads_back_as_an_unpaced_one() {
    let dir = tempfile::tempdir().unwrap();
    let want = dir.path().join("want");
    import_penguins(want.to_str().unwrap());
    let db = dir.path().join("paced");
    let out = import_paced(db.to_str().unwrap(), "1M");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = scan(want.to_str().unwrap());
    // A header line, then the 344 rows.
    assert_eq!(rows.iter().filter(|b| **b == b'\n').count(), 345);
    assert_eq!(scan(db.to_str().unwrap()), rows);
}

#[test]
fn a_zero_or_unreadable_rate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for rate in ["0", "fast"] {
        let db = dir.path().join(rate);
        let out = import_paced(db.to_str().unwrap(), rate);
        assert!(!out.status.success(), "--write-rate {rate} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--write-rate"), "{err}");
        assert!(
            !db.join("CURRENT").exists(),
            "no Db is made for a refused import"
        );
    }
}
