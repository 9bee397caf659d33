//! Per-thread journals of started and acknowledged writes, read by the crash verifier.
//!
//! Lines (one `write` call each, so a killed process leaves whole lines; an unterminated last
//! line is ignored):
//! * `S <id> <ns> <op> <sync 0|1> <key>=<version><P|D|H> …` before the operation is issued;
//! * `A <id> <ns>` once it returned `Ok`;
//! * `F <id> <ns>` once it returned an error (it may or may not have applied).
//!
//! `<ns>` is nanoseconds since the process's journal epoch, shared by all its threads, so an
//! `A` before an `S` of another thread means the first operation returned before the second
//! was issued. No fsync: the OS keeps the page cache across a process kill, and the in-memory
//! sink (fault mode) survives the simulated power loss by construction.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::keys::Key;
use crate::oracle::Kind;
use crate::report::Op;

enum Sink {
    Off,
    File(File),
    Mem(Arc<Mutex<Vec<String>>>),
}

/// One thread's journal.
pub struct Journal {
    sink: Sink,
    epoch: Instant,
    thread: u64,
    next_id: u64,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("thread", &self.thread)
            .finish()
    }
}

impl Journal {
    /// A journal that records nothing (plain stress mode).
    pub fn off() -> Self {
        Self::with(Sink::Off, Instant::now(), 0)
    }

    /// A journal appending to a (new) file.
    pub fn file(path: &Path, epoch: Instant, thread: u64) -> std::io::Result<Self> {
        Ok(Self::with(Sink::File(File::create(path)?), epoch, thread))
    }

    /// A journal kept in memory (its lines are shared with the caller).
    pub fn mem(lines: Arc<Mutex<Vec<String>>>, epoch: Instant, thread: u64) -> Self {
        Self::with(Sink::Mem(lines), epoch, thread)
    }

    fn with(sink: Sink, epoch: Instant, thread: u64) -> Self {
        Journal {
            sink,
            epoch,
            thread,
            next_id: 0,
        }
    }

    fn emit(&mut self, line: String) {
        match &mut self.sink {
            Sink::Off => {}
            Sink::File(f) => {
                // A journal that cannot be written makes the verification meaningless.
                f.write_all(line.as_bytes()).expect("journal write");
            }
            Sink::Mem(v) => v.lock().push(line),
        }
    }

    fn now(&self) -> u128 {
        self.epoch.elapsed().as_nanos()
    }

    /// Records that an operation is about to be issued; returns its id.
    pub fn start(&mut self, op: Op, sync: bool, writes: &[(Key, u64, Kind)]) -> u64 {
        self.next_id += 1;
        let id = (self.thread << 40) | self.next_id;
        if matches!(self.sink, Sink::Off) {
            return id;
        }
        let mut line = format!("S {id} {} {} {}", self.now(), op.name(), u8::from(sync));
        for (k, v, kind) in writes {
            line.push_str(&format!(" {k}={v}{}", kind.code()));
        }
        line.push('\n');
        self.emit(line);
        id
    }

    /// Records that operation `id` returned `Ok`.
    pub fn ack(&mut self, id: u64) {
        if !matches!(self.sink, Sink::Off) {
            let line = format!("A {id} {}\n", self.now());
            self.emit(line);
        }
    }

    /// Records that operation `id` returned an error.
    pub fn fail(&mut self, id: u64) {
        if !matches!(self.sink, Sink::Off) {
            let line = format!("F {id} {}\n", self.now());
            self.emit(line);
        }
    }
}

/// One journaled operation.
#[derive(Debug, Clone)]
pub struct JOp {
    /// Operation id.
    pub id: u64,
    /// Kind.
    pub op: Op,
    /// Issued with `sync: true`.
    pub sync: bool,
    /// Issue time (ns).
    pub start: u128,
    /// Time it returned `Ok` (ns).
    pub acked: Option<u128>,
    /// It returned an error.
    pub failed: bool,
    /// Keys written, with versions and kinds.
    pub writes: Vec<(Key, u64, Kind)>,
}

/// Parses the lines of every journal; ignores an unterminated last line of a file.
pub fn parse(journals: &[Vec<String>]) -> Result<Vec<JOp>, String> {
    let mut ops: Vec<JOp> = Vec::new();
    let mut by_id = std::collections::HashMap::new();
    for lines in journals {
        for line in lines {
            let Some(line) = line.strip_suffix('\n') else {
                continue;
            };
            let mut f = line.split(' ');
            let bad = || format!("bad journal line {line:?}");
            let tag = f.next().ok_or_else(bad)?;
            let id: u64 = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
            let ns: u128 = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
            match tag {
                "S" => {
                    let op = f.next().and_then(Op::from_name).ok_or_else(bad)?;
                    let sync = f.next().ok_or_else(bad)? == "1";
                    let mut writes = Vec::new();
                    for w in f {
                        let (k, rest) = w.split_once('=').ok_or_else(bad)?;
                        let key = Key::parse(k.as_bytes()).ok_or_else(bad)?;
                        let kind = rest
                            .chars()
                            .last()
                            .and_then(Kind::from_code)
                            .ok_or_else(bad)?;
                        let v = rest[..rest.len() - 1].parse().map_err(|_| bad())?;
                        writes.push((key, v, kind));
                    }
                    by_id.insert(id, ops.len());
                    ops.push(JOp {
                        id,
                        op,
                        sync,
                        start: ns,
                        acked: None,
                        failed: false,
                        writes,
                    });
                }
                "A" | "F" => {
                    let &i = by_id.get(&id).ok_or_else(bad)?;
                    if tag == "A" {
                        ops[i].acked = Some(ns);
                    } else {
                        ops[i].failed = true;
                    }
                }
                _ => return Err(bad()),
            }
        }
    }
    Ok(ops)
}

/// Reads a journal file as lines, each keeping its `\n` (a torn last line has none).
pub fn read_lines(path: &Path) -> std::io::Result<Vec<String>> {
    let text = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&text);
    Ok(text.split_inclusive('\n').map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_lines_round_trip_and_torn_tail_is_ignored() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut j = Journal::mem(Arc::clone(&lines), Instant::now(), 3);
        let id = j.start(
            Op::Batch,
            true,
            &[(Key::K(1), 5, Kind::Put), (Key::K(2), 9, Kind::Delete)],
        );
        j.ack(id);
        let id2 = j.start(Op::Flush, false, &[]);
        let mut all = lines.lock().clone();
        all.push(format!("A {id2} 12")); // torn: no newline
        let ops = parse(&[all]).unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].op, Op::Batch);
        assert!(ops[0].sync && ops[0].acked.is_some());
        assert_eq!(ops[0].writes[1], (Key::K(2), 9, Kind::Delete));
        assert!(ops[1].acked.is_none(), "torn ack line ignored");
    }
}
