//! `sluice-stress`: a concurrent stress test of Sluice with an expected-state oracle (RocksDB
//! `db_stress` style), a process-kill crash mode (`db_crashtest` style) and an in-process
//! fault-injection mode on `MemFs`.
//!
//! Modules, bottom up:
//! * [`keys`]: the three key spaces and self-describing values `key:version:padding`;
//! * [`oracle`]: per-key committed/pending versions and history; the read bounds;
//! * [`journal`]: per-thread logs of started and acknowledged writes;
//! * [`workload`]: the worker threads (random operation mix, every read checked);
//! * [`stress`]: the concurrent mode (phases, reopen, full verification);
//! * [`crash`]: the crash verifier and the process-kill driver and child;
//! * [`faults`]: the in-process fault and power-loss mode.
//!
//! Every anomaly is printed with the seed, the operation, the key, what was read and the key's
//! recent history; a seed replays every thread's operation sequence.
//!
//! ```no_run
//! let summary = sluice_stress::stress::run(&sluice_stress::stress::RunConfig {
//!     seed: 7,
//!     threads: 4,
//!     secs: 5.0,
//!     ..Default::default()
//! });
//! println!("{}", summary.totals_line("run", 7, ""));
//! assert!(summary.anomalies.is_empty());
//! ```

pub mod crash;
pub mod faults;
pub mod imports;
pub mod journal;
pub mod keys;
pub mod oracle;
pub mod report;
pub mod storage;
pub mod stress;
pub mod workload;

pub use report::{Anomaly, Op, Stats, Summary};
