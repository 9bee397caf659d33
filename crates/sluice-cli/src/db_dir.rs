//! The Db directory as every command meets it: checked before it is opened (precise messages
//! for a missing, foreign or half-created directory), opened read-only or as its one writer
//! with its own persisted options (and, for a writer, the `--events` listener), a held LOCK
//! said in an operator's terms, and the import temporary directories that may lie in it. Uses
//! no other room of the CLI.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sluice::{Db, EventListener, JsonLinesListener, Options};

/// The global `--events FILE`, set once by `main` before a command runs.
static EVENTS_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Makes every Db a command opens for writing report its events, as JSON lines appended to
/// `path` (`--events`).
pub(crate) fn record_events_to(path: PathBuf) {
    let _ = EVENTS_FILE.set(path);
}

/// The listeners of `--events` (none without it). The file is created (or appended to) now,
/// so a bad path fails before the Db is touched.
pub(crate) fn event_listeners() -> Result<Vec<Arc<dyn EventListener>>, String> {
    let Some(path) = EVENTS_FILE.get() else {
        return Ok(Vec::new());
    };
    let l =
        JsonLinesListener::create(path).map_err(|e| format!("--events {}: {e}", path.display()))?;
    Ok(vec![Arc::new(l)])
}

/// Why `dir` cannot be opened as an existing Db, if it cannot: missing, a file, empty, a Db
/// whose creation has not finished, or a directory of other files ([`sluice::DirContents`]).
/// With `create`, only a file or a directory of other files is refused (a Db is never created
/// among someone else's files): a missing or empty directory, or one holding only an
/// interrupted creation's leftovers, is where the engine creates the Db — under the Db's
/// LOCK, so a racing creator makes this open fail with "locked by another process".
pub(crate) fn check_db_dir(dir: &Path, create: bool) -> Result<(), String> {
    use sluice::DirContents;
    let contents = DirContents::inspect(&sluice::fs::RealFs, dir).map_err(|e| e.to_string())?;
    let Some(why) = contents.why_not_a_db(dir) else {
        return Ok(());
    };
    let creatable = matches!(
        contents,
        DirContents::Missing | DirContents::Empty | DirContents::Unfinished(_)
    );
    if create && creatable {
        return Ok(());
    }
    Err(format!(
        "--db {why}{}",
        if create {
            "; a new database is only created in a missing or empty directory"
        } else {
            ""
        }
    ))
}

/// The Db's own persisted options (so a tool never resets e.g. its compression), or the
/// defaults for a Db that has none yet.
fn db_options(dir: &Path, create: bool) -> Result<Options, Box<dyn std::error::Error>> {
    check_db_dir(dir, create)?;
    let base = Options {
        create_if_missing: create,
        ..Options::default()
    };
    if !dir.join("CURRENT").exists() {
        return Ok(base);
    }
    Ok(Options::load_latest(dir, base)?)
}

/// Opens a Db for writing (creating it if `create`), with its persisted options and the
/// `--events` listener. Takes the directory's LOCK: one writer at a time.
pub(crate) fn open_writable(dir: &Path, create: bool) -> Result<Db, Box<dyn std::error::Error>> {
    let opts = Options {
        listeners: event_listeners()?,
        ..db_options(dir, create)?
    };
    Db::open(dir, opts).map_err(|e| lock_message(dir, e))
}

/// A Db a command may be about to create: its directory holds no Db yet (missing, empty, or
/// only an interrupted creation's leftovers). If the command then fails having written
/// nothing, [`close_failed`] takes the new Db away again, so a failed import or ingest into a
/// new path leaves no empty Db (and its preallocated WAL) behind.
pub(crate) struct NewDb {
    dir: PathBuf,
    /// The directory did not exist: the command made it, and removes it again.
    made_dir: bool,
}

/// What [`close_failed`] needs to know, looked at before the command opens `dir`: `None` when
/// it holds a Db already (or anything the open will refuse).
pub(crate) fn new_db(dir: &Path) -> Option<NewDb> {
    use sluice::DirContents;
    let made_dir = match DirContents::inspect(&sluice::fs::RealFs, dir).ok()? {
        DirContents::Missing => true,
        DirContents::Empty | DirContents::Unfinished(_) => false,
        _ => return None,
    };
    Some(NewDb {
        dir: dir.to_path_buf(),
        made_dir,
    })
}

/// Closes `db` after its command failed. If the command created it (`new`) and it holds
/// nothing — no write, no table — it is removed again, without the Db's lock ever being let
/// go between the close and the removal (so no other process can have opened it and written
/// in between): `CURRENT` first (from then on any open sees an unfinished creation, never a
/// Db missing files), then the rest, the LOCK last, and the directory if the command made
/// it. It stays when it holds a file a new Db does not have. Best effort: a removal that
/// fails leaves what a later open treats as an unfinished creation; a close that fails is
/// said on stderr (the command's own error is the one reported).
pub(crate) fn close_failed(new: Option<NewDb>, db: Db) {
    let untouched =
        db.snapshot().seqno() == 0 && db.current_version().file_numbers().next().is_none();
    let lock = match db.close_keeping_lock() {
        Ok(lock) => lock,
        Err(e) => {
            eprintln!("warning: closing the database after the failure failed too: {e}");
            return;
        }
    };
    let Some(new) = new.filter(|_| untouched) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&new.dir) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !names.iter().any(|n| n == "CURRENT") || !names.iter().all(|n| new_db_file(n)) {
        return;
    }
    if std::fs::remove_file(new.dir.join("CURRENT")).is_err() {
        return;
    }
    for n in names.iter().filter(|n| *n != "CURRENT" && *n != "LOCK") {
        let _ = std::fs::remove_file(new.dir.join(n));
    }
    // The LOCK goes while held: an open that had it open before this locks a file no longer
    // at its path, and refuses it (`RealFs::lock` checks).
    let _ = std::fs::remove_file(new.dir.join("LOCK"));
    drop(lock);
    if new.made_dir {
        let _ = std::fs::remove_dir(&new.dir);
    }
}

/// A name a Db's first open writes and its close leaves: `CURRENT`, `LOCK`, `MANIFEST-N`,
/// `OPTIONS-N`, `N.log`.
fn new_db_file(name: &str) -> bool {
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    name == "CURRENT"
        || name == "LOCK"
        || digits(name.strip_prefix("MANIFEST-"))
        || digits(name.strip_prefix("OPTIONS-"))
        || digits(name.strip_suffix(".log"))
}

/// A LOCK held by another process, said in an operator's terms.
pub(crate) fn lock_message(dir: &Path, e: sluice::Error) -> Box<dyn std::error::Error> {
    if let sluice::Error::Io { source, .. } = &e {
        if source.kind() == std::io::ErrorKind::WouldBlock {
            return format!(
                "{} is locked by another process (it holds the LOCK file: the Db is open for \
                 writing by another process, or being created); read commands (get, scan, stats, \
                 lsm, verify, …) work beside it; write commands fail until it closes",
                dir.display()
            )
            .into();
        }
    }
    e.into()
}

/// Opens an existing Db read-only: nothing is flushed, written or deleted, no lock is taken,
/// so it works beside a writer: the view holds its tables, so one the writer compacts away
/// meanwhile still reads through it (a command that opens tables by name may fail: rerun).
pub(crate) fn open_read_only(dir: &Path) -> Result<Db, Box<dyn std::error::Error>> {
    Ok(Db::open_read_only(dir, db_options(dir, false)?)?)
}

/// The `sluice-import-*` and `sluice-resume-*` directories in the Db directory (where imports
/// keep their files unless `--tmp-dir` says otherwise), one line each. A read command removes
/// nothing: it says whose each is, and what the next import does with it.
pub(crate) fn tmp_dir_lines(dir: &Path) -> Vec<String> {
    sluice_import::find_tmp_dirs(dir)
        .iter()
        .map(|t| format!("import temporary directory {}", t.describe()))
        .collect()
}

/// [`tmp_dir_lines`] as JSON objects.
pub(crate) fn tmp_dirs_json(dir: &Path) -> Vec<serde_json::Value> {
    sluice_import::find_tmp_dirs(dir)
        .iter()
        .map(|t| {
            serde_json::json!({
                "path": t.path.display().to_string(),
                "bytes": t.bytes,
                "pid": t.pid,
                "process_running": t.process_running,
                "resumable": t.resumable,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_dir_messages_are_precise() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert!(check_db_dir(&missing, false)
            .unwrap_err()
            .contains("does not exist"));
        assert!(check_db_dir(&missing, true).is_ok());
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_db_dir(&file, false)
            .unwrap_err()
            .contains("is a file, not a database directory"));
        assert!(check_db_dir(&file, true).is_err());
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        assert!(check_db_dir(&other, true).is_ok(), "an empty directory");
        std::fs::write(other.join("notes.txt"), b"x").unwrap();
        let e = check_db_dir(&other, true).unwrap_err();
        assert!(
            e.contains("not a Sluice database") && e.contains("notes.txt"),
            "{e}"
        );
        assert!(check_db_dir(&other, false).is_err());
        // What a creation killed before CURRENT leaves: a new Db to a writer, and to a reader
        // a creation that has not finished (not "not a Sluice database").
        let killed = dir.path().join("killed");
        std::fs::create_dir(&killed).unwrap();
        for name in ["000002.log", "LOCK", "MANIFEST-000003"] {
            std::fs::write(killed.join(name), b"").unwrap();
        }
        assert!(check_db_dir(&killed, true).is_ok());
        let e = check_db_dir(&killed, false).unwrap_err();
        assert!(e.contains("creation has not finished"), "{e}");
    }
}
