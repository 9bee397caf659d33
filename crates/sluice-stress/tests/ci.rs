//! CI-sized runs of the three modes (about a minute of wall time on 2 cores; the three tests
//! run in parallel). Longer runs: `scripts/stress.sh --hours H`.
//!
//! Every run must finish without an anomaly and must actually have exercised what it claims
//! to (writes, reads, ingests of every kind, reopens, kills, faults, verified rounds).

use sluice_stress::crash::{run_crash, CrashConfig};
use sluice_stress::faults::{run_faults, FaultsConfig};
use sluice_stress::stress::{run, RunConfig};
use sluice_stress::{Op, Summary};
use std::sync::atomic::Ordering;

fn seed() -> u64 {
    std::env::var("SLUICE_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

fn assert_clean(s: &Summary, line: &str) {
    println!("{line}");
    let report: Vec<String> = s.anomalies.iter().map(|a| a.to_string()).collect();
    assert!(s.anomalies.is_empty(), "{line}\n{}", report.join("\n"));
}

#[test]
fn concurrent_stress_on_a_real_directory_with_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let seed = seed();
    let s = run(&RunConfig {
        seed,
        threads: 8,
        secs: 40.0,
        keys: 4_000,
        zcap: 20_000,
        dir: Some(dir.path().to_path_buf()),
        reopen_every: 13.0,
        disabled: Vec::new(),
        imports: false,
    });
    assert_clean(&s, &s.totals_line("run", seed, "threads=8 secs=40"));
    for op in [
        Op::Put,
        Op::Delete,
        Op::DeleteRange,
        Op::Batch,
        Op::Get,
        Op::Iter,
        Op::Snapshot,
        Op::SnapshotReread,
        Op::Ingest,
        Op::IngestOverlap,
        Op::IngestSmall,
        Op::IngestBehind,
        Op::Flush,
        Op::Compact,
        Op::SeqPut,
        Op::SeqIngest,
        Op::Reopen,
    ] {
        assert!(s.stats.get(op) > 0, "{} never ran", op.name());
    }
    assert_eq!(s.stats.errors.load(Ordering::Relaxed), 0);
}

#[test]
fn twenty_sigkills_lose_no_acknowledged_write() {
    let seed = seed();
    let s = run_crash(&CrashConfig {
        bin: env!("CARGO_BIN_EXE_sluice-stress").into(),
        seed,
        kills: 20,
        dir: None,
        keys: 2_000,
        zcap: 20_000,
        threads: 6,
        min_ms: 200,
        max_ms: 1_500,
        disabled: Vec::new(),
        check_leaks: true,
        imports: false,
    });
    assert_clean(&s, &s.totals_line("crash", seed, "kills=20"));
    assert_eq!(s.stats.rounds.load(Ordering::Relaxed), 20);
    assert!(s.stats.get(Op::Put) > 0 && s.stats.get(Op::SeqPut) > 0);
}

#[test]
fn faults_then_power_loss_over_several_seeds() {
    let seed = seed();
    let s = run_faults(&FaultsConfig {
        seed,
        seeds: 5,
        rounds: 3,
        threads: 4,
        keys: 2_000,
        zcap: 20_000,
        round_ms: 1_500,
        disabled: Vec::new(),
        check_leaks: true,
    });
    assert_clean(&s, &s.totals_line("faults", seed, "seeds=5 rounds=3"));
    assert_eq!(s.stats.rounds.load(Ordering::Relaxed), 15);
    assert!(
        s.stats.faults.load(Ordering::Relaxed) > 0,
        "no fault injected"
    );
    assert!(
        s.stats.errors.load(Ordering::Relaxed) > 0,
        "faults never surfaced"
    );
}

#[test]
fn sigkills_during_imports_leave_each_import_whole_or_absent() {
    let seed = seed();
    let s = run_crash(&CrashConfig {
        bin: env!("CARGO_BIN_EXE_sluice-stress").into(),
        seed,
        kills: 8,
        dir: None,
        keys: 2_000,
        zcap: 20_000,
        threads: 3,
        min_ms: 300,
        max_ms: 2_500,
        disabled: Vec::new(),
        check_leaks: true,
        imports: true,
    });
    assert_clean(&s, &s.totals_line("crash", seed, "kills=8 imports"));
    assert_eq!(s.stats.rounds.load(Ordering::Relaxed), 8);
    assert!(
        s.stats.get(Op::Put) > 0,
        "the foreground workload never ran"
    );
    let i = &s.imports;
    assert!(i.done > 0, "no import finished: {i:?}");
    assert!(
        i.interrupted_applied + i.interrupted_absent > 0,
        "no kill landed during an import: {i:?}"
    );
}

#[test]
fn injected_io_errors_fail_imports_cleanly_beside_the_workload() {
    // In a process of its own: failpoints are process-wide, and the other tests' drivers
    // import too (their reference imports).
    let dir = tempfile::tempdir().unwrap();
    let seed = seed();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice-stress"))
        .args([
            "run",
            "--imports",
            "--secs",
            "30",
            "--threads",
            "3",
            "--keys",
            "2000",
        ])
        .args(["--reopen-every", "10", "--seed", &seed.to_string()])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("TOTALS"))
        .unwrap_or("");
    println!("{line}");
    assert!(out.status.success(), "{line}\n{stderr}");
    let field = |k: &str| -> u64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {line:?}"))
    };
    assert_eq!(field("anomalies"), 0, "{stderr}");
    assert!(
        field("imports_faulted") > 0,
        "no injected fault failed an import"
    );
    assert!(field("imports_done") > 0, "no import succeeded");
    // Half the faulted imports are resumed at once (their unsynced files torn first), each
    // checked against the reference: with the workload writing beside them, which must not
    // refuse the resume.
    assert!(field("resume_runs") > 0, "no faulted import was resumed");
    assert!(
        field("resumed") > 0,
        "no resume continued from a checkpoint"
    );
    // The workload never saw an error: a failed import touches nothing of theirs.
    assert_eq!(field("errors"), 0);
    assert!(field("put") > 0 && field("get") > 0);
}
