//! Crash mode: what must survive a process kill or a power loss, checked from the journals.
//!
//! A round: the workload runs (in a child process killed with SIGKILL, or in process on a
//! `MemFs` that then loses power), the database is opened again, and [`CrashModel::verify_round`]
//! compares every key with the journals of the round:
//! 1. *Required* operations must have applied. With a process kill: every acknowledged one
//!    (the WAL is handed to the OS before the acknowledgement). With a power loss: every
//!    acknowledged durability point (synced write, ingest, flush, compaction) and every
//!    operation acknowledged before some operation that survived (or a durability point)
//!    was issued — the prefix property of a log.
//! 2. Per key: the state on disk is the round's initial state (only when no required operation
//!    wrote the key) or a version at or above the last required one, among those started.
//! 3. Multi-key operations (batches, range deletions, ingests) are all-or-nothing.
//! 4. The sequential series is contiguous from 0 and reaches every required write.
//! 5. After background work settles, no table file outside the current version is left.
//!
//! The verified state becomes the next round's initial state ([`KeyBase`] per key), and the
//! next free version of every key carries over, so versions name writes across rounds.
//!
//! Rooms: here the model carried between rounds; `verify.rs` the round's verification, one
//! function per step; `kill.rs` the process-kill driver and its child. The power-loss mode is
//! `faults.rs`.

use std::path::Path;

use crate::keys::Key;
use crate::oracle::{KeyBase, Oracle};
use crate::report::Op;

mod kill;
mod verify;

pub use kill::{child_main, names, parse_names, run_crash, ChildArgs, CrashConfig};

/// What the crash loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// SIGKILL: the OS keeps everything written; only the process dies.
    ProcessKill,
    /// Power loss: unsynced bytes and names are lost (`MemFs::crashed_copy`).
    PowerLoss,
}

/// The state carried from one crash round to the next.
#[derive(Debug, Clone)]
pub struct CrashModel {
    /// Size of the main key space.
    pub keys: u32,
    /// Capacity of the `z` space.
    pub zcap: u32,
    /// Per key (`k` then `z`): the verified state and the next version.
    pub bases: Vec<KeyBase>,
    /// Next unused `z` key.
    pub z_next: u32,
    /// Length of the sequential series on disk.
    pub s_next: u64,
    /// What the crash loses.
    pub loss: Loss,
    /// Run check 5 (leftover table files).
    pub check_leaks: bool,
}

/// What a verified round counted.
#[derive(Debug, Default, Clone)]
pub struct RoundReport {
    /// Journaled operations (writes, ingests, flushes, compactions).
    pub ops: u64,
    /// Of which acknowledged.
    pub acked: u64,
    /// Of which failed.
    pub failed: u64,
    /// Keys checked.
    pub keys: u64,
    /// Journaled operations per kind.
    pub per_op: Vec<(Op, u64)>,
}

impl CrashModel {
    /// Every key absent.
    pub fn new(keys: u32, zcap: u32, loss: Loss) -> Self {
        CrashModel {
            keys,
            zcap,
            bases: vec![KeyBase::ABSENT; (keys + zcap) as usize],
            z_next: 0,
            s_next: 0,
            loss,
            check_leaks: true,
        }
    }

    /// An oracle starting from the verified state.
    pub fn oracle(&self) -> Oracle {
        Oracle::new(self.keys, self.zcap, &self.bases, self.z_next, self.s_next)
    }

    /// Writes the model for a child process.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut s = format!(
            "{} {} {} {}\n",
            self.keys, self.zcap, self.z_next, self.s_next
        );
        let n = (self.keys + self.z_next.min(self.zcap)) as usize;
        for b in &self.bases[..n] {
            s.push_str(&format!(
                "{} {} {}\n",
                u8::from(b.present),
                b.version,
                b.next
            ));
        }
        std::fs::write(path, s)
    }

    /// Reads what [`CrashModel::save`] wrote.
    pub fn load(path: &Path, loss: Loss) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = || format!("{}: malformed state file", path.display());
        let mut lines = text.lines();
        let head: Vec<u64> = lines
            .next()
            .ok_or_else(bad)?
            .split(' ')
            .map(|s| s.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [keys, zcap, z_next, s_next] = head[..] else {
            return Err(bad());
        };
        let mut m = CrashModel::new(keys as u32, zcap as u32, loss);
        m.z_next = z_next as u32;
        m.s_next = s_next;
        for (i, line) in lines.enumerate() {
            let f: Vec<u64> = line
                .split(' ')
                .map(|s| s.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?;
            let [p, version, next] = f[..] else {
                return Err(bad());
            };
            *m.bases.get_mut(i).ok_or_else(bad)? = KeyBase {
                present: p == 1,
                version,
                next,
            };
        }
        Ok(m)
    }

    fn idx(&self, k: Key) -> Option<usize> {
        match k {
            Key::K(i) if i < self.keys => Some(i as usize),
            Key::Z(i) if i < self.zcap => Some((self.keys + i) as usize),
            _ => None,
        }
    }

    fn key_at(&self, idx: usize) -> Key {
        let i = idx as u32;
        if i < self.keys {
            Key::K(i)
        } else {
            Key::Z(i - self.keys)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CrashModel, Loss};
    use crate::oracle::KeyBase;

    #[test]
    fn the_model_survives_a_save_and_load() {
        let mut m = CrashModel::new(3, 4, Loss::ProcessKill);
        m.bases[1] = KeyBase {
            present: true,
            version: 7,
            next: 9,
        };
        m.z_next = 2;
        m.s_next = 11;
        let dir = tempfile::tempdir().unwrap();
        m.save(&dir.path().join("s")).unwrap();
        let l = CrashModel::load(&dir.path().join("s"), Loss::ProcessKill).unwrap();
        assert_eq!(l.bases, m.bases);
        assert_eq!((l.z_next, l.s_next), (2, 11));
    }
}
