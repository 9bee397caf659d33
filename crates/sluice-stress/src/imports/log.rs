//! The child's log of its imports (`start N`, `resumed N`, `done N`, `failed N: why`) and of
//! the group rewrites after them (`rewrote N: G`, `rewrite-failed N: why`), read back by the
//! driver.

use std::path::Path;

use super::Outcome;

/// One import of the child's log: its number, how it ended, and whether it continued from a
/// checkpoint (`resumed N`, logged before `done N`).
pub(super) type LogEntry = (u64, Outcome, bool);

/// The child's log: its imports, the row groups rewritten after them (`rewrote N: G`), and
/// the first group rewrite that failed (`rewrite-failed N: reason`; the child injects no
/// fault, so any failure is a bug).
#[derive(Debug, Default, PartialEq)]
pub(super) struct ChildLog {
    pub(super) imports: Vec<LogEntry>,
    pub(super) groups_rewritten: u64,
    pub(super) rewrite_failed: Option<String>,
}

pub(super) fn read_log(path: &Path) -> Result<ChildLog, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut log = ChildLog::default();
    let out = &mut log.imports;
    for l in text.lines() {
        let (word, rest) = l.split_once(' ').unwrap_or((l, ""));
        let num = |s: &str| s.parse::<u64>().map_err(|_| format!("bad log line {l:?}"));
        match word {
            "start" => out.push((num(rest)?, Outcome::InFlight, false)),
            "resumed" => match out.last_mut() {
                Some((m, Outcome::InFlight, r)) if *m == num(rest)? => *r = true,
                _ => return Err(format!("log line {l:?} follows no started import")),
            },
            "done" | "failed" => {
                let (n, why) = rest.split_once(": ").unwrap_or((rest, ""));
                let n = num(n)?;
                match out.last_mut() {
                    Some((m, o, _)) if *m == n && *o == Outcome::InFlight => {
                        *o = if word == "done" {
                            Outcome::Done
                        } else {
                            Outcome::Failed(why.to_string())
                        }
                    }
                    _ => return Err(format!("log line {l:?} ends no started import")),
                }
            }
            "rewrote" | "rewrite-failed" => {
                let (n, what) = rest
                    .split_once(": ")
                    .ok_or_else(|| format!("bad log line {l:?}"))?;
                match out.last() {
                    Some((m, Outcome::Done, _)) if *m == num(n)? => {}
                    _ => return Err(format!("log line {l:?} follows no finished import")),
                }
                if word == "rewrote" {
                    log.groups_rewritten += num(what)?;
                } else if log.rewrite_failed.is_none() {
                    log.rewrite_failed = Some(format!("after import {n}: {what}"));
                }
            }
            _ => return Err(format!("bad log line {l:?}")),
        }
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::super::LOG;
    use super::*;

    #[test]
    fn the_log_reads_back_and_rejects_what_it_cannot_be() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(LOG);
        let imports = |p: &Path| read_log(p).map(|l| l.imports);
        std::fs::write(&p, "start 4\ndone 4\nstart 5\nfailed 5: dup: 1\nstart 6\n").unwrap();
        assert_eq!(
            imports(&p).unwrap(),
            vec![
                (4, Outcome::Done, false),
                (5, Outcome::Failed("dup: 1".into()), false),
                (6, Outcome::InFlight, false)
            ]
        );
        std::fs::write(&p, "start 4\ndone 5\n").unwrap();
        assert!(read_log(&p).is_err());
        std::fs::write(&p, "start 4\nresumed 4\ndone 4\nstart 5\n").unwrap();
        assert_eq!(
            imports(&p).unwrap(),
            vec![(4, Outcome::Done, true), (5, Outcome::InFlight, false)]
        );
        std::fs::write(&p, "start 4\nresumed 3\n").unwrap();
        assert!(read_log(&p).is_err());
        assert_eq!(
            read_log(&dir.path().join("none")).unwrap(),
            ChildLog::default()
        );
        // Rewrites follow a finished import; their groups add up; the first failure is kept.
        std::fs::write(
            &p,
            "start 4\ndone 4\nrewrote 4: 3\nstart 5\ndone 5\nrewrote 5: 2\n\
             start 6\ndone 6\nrewrite-failed 6: chunk: bad\nstart 7\ndone 7\n\
             rewrite-failed 7: other\n",
        )
        .unwrap();
        let log = read_log(&p).unwrap();
        assert_eq!(log.imports.len(), 4);
        assert_eq!(log.groups_rewritten, 5);
        assert_eq!(
            log.rewrite_failed.as_deref(),
            Some("after import 6: chunk: bad")
        );
        for bad in [
            "start 4\nrewrote 4: 1\n",
            "start 4\ndone 4\nrewrote 3: 1\n",
            "start 4\ndone 4\nrewrote 4\n",
            "start 4\nfailed 4: x\nrewrite-failed 4: y\n",
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(read_log(&p).is_err(), "{bad:?}");
        }
    }
}
