//! Recovery of a WAL stage's ring after a crash, and the sweep of rings whose Db is gone
//! (see the parent module's "Recovery").

use std::io;
use std::path::{Path, PathBuf};

use super::{
    DIR_AT, HEADER, MAGIC, MARKER, MAX_RING, NAME_PREFIX, VERSION, W_BASE, W_DIR_LEN, W_DRAINED,
    W_MAGIC, W_PUBLISHED, W_RING, W_VERSION, W_WAL,
};

/// What [`recover`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Bytes written to the WAL from the ring.
    pub bytes: u64,
    /// The WAL they went to.
    pub wal_number: u64,
}

/// Why [`recover`] failed.
#[derive(Debug)]
pub enum StageError {
    /// Reading the ring or marker, or writing the WAL, failed.
    Io(PathBuf, io::Error),
    /// The marker or the ring's header is not what a stage writes.
    Corrupt(PathBuf, u64, String),
}

/// At a writable open, under the Db's lock: writes the acknowledged bytes a crashed process
/// left in its ring (named by `<db_dir>/WAL-STAGE`, in `stage_dir`) to the WAL they belong to
/// (`wal_path(number)`), syncs it, and removes the ring and the marker. `None`: no marker. A
/// marker whose ring is gone (a reboot) is removed; a ring that names another directory is
/// left alone. A corrupt marker or ring is an error naming it and the offset (the Db is then
/// not opened: its bytes may be acknowledged writes).
pub fn recover(
    db_dir: &Path,
    stage_dir: &Path,
    wal_path: impl Fn(u64) -> PathBuf,
) -> Result<Option<Recovered>, StageError> {
    let marker = db_dir.join(MARKER);
    let io_err = |p: &Path, e: io::Error| StageError::Io(p.to_path_buf(), e);
    let name = match std::fs::read(&marker) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&marker, e)),
    };
    let name = std::str::from_utf8(&name)
        .ok()
        .filter(|n| {
            n.len() < 200
                && n.starts_with(NAME_PREFIX)
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        .ok_or_else(|| StageError::Corrupt(marker.clone(), 0, "not a WAL stage's name".into()))?;
    let ring_path = stage_dir.join(name);
    let bytes = match std::fs::metadata(&ring_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(&ring_path, e)),
        Ok(m) if m.len() > (HEADER + MAX_RING) as u64 => {
            let why = format!("{} bytes: too large for a stage", m.len());
            return Err(StageError::Corrupt(ring_path, 0, why));
        }
        Ok(m) if !owned_by_us(&m) => {
            // Anyone may create files in `/dev/shm`: bytes from a file another user made are
            // not this Db's writes.
            let why = "owned by another user: not this Db's stage".to_string();
            return Err(StageError::Corrupt(ring_path, 0, why));
        }
        Ok(_) => Some(std::fs::read(&ring_path).map_err(|e| io_err(&ring_path, e))?),
    };
    let mut done = Recovered::default();
    if let Some(bytes) = bytes {
        let dir = std::fs::canonicalize(db_dir).map_err(|e| io_err(db_dir, e))?;
        let stage =
            parse(&bytes).map_err(|(at, why)| StageError::Corrupt(ring_path.clone(), at, why))?;
        if stage.dir != dir.as_os_str().as_encoded_bytes() {
            // Another Db's ring (this directory is a copy): not ours to drain or remove.
            std::fs::remove_file(&marker).map_err(|e| io_err(&marker, e))?;
            return Ok(None);
        }
        if stage.published > stage.drained {
            let wal = wal_path(stage.wal_number);
            // A WAL that is gone was flushed and deleted, which only happens after a switch
            // drained it whole (invariant 3): nothing of it is left to write.
            if wal.exists() {
                write_tail(&wal, &bytes, &stage).map_err(|e| io_err(&wal, e))?;
                done = Recovered {
                    bytes: stage.published - stage.drained,
                    wal_number: stage.wal_number,
                };
            }
        }
        std::fs::remove_file(&ring_path).map_err(|e| io_err(&ring_path, e))?;
    }
    std::fs::remove_file(&marker).map_err(|e| io_err(&marker, e))?;
    Ok(Some(done))
}

#[cfg(unix)]
fn owned_by_us(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    m.uid() == rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn owned_by_us(_: &std::fs::Metadata) -> bool {
    true
}

struct Parsed<'a> {
    published: u64,
    drained: u64,
    wal_number: u64,
    base: u64,
    ring: u64,
    dir: &'a [u8],
}

/// The header of a ring read from its file, checked.
fn parse(bytes: &[u8]) -> Result<Parsed<'_>, (u64, String)> {
    let word = |i: usize| -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    if bytes.len() < HEADER || word(W_MAGIC) != MAGIC {
        return Err((0, "not a WAL stage (bad magic)".into()));
    }
    if word(W_VERSION) != VERSION {
        return Err((8, format!("unknown stage version {}", word(W_VERSION))));
    }
    let ring = word(W_RING);
    if ring == 0 || ring > MAX_RING as u64 || bytes.len() as u64 != HEADER as u64 + ring {
        let why = format!("ring of {ring} bytes in a file of {}", bytes.len());
        return Err((8 * W_RING as u64, why));
    }
    let dir_len = word(W_DIR_LEN);
    if dir_len > (HEADER - DIR_AT) as u64 {
        return Err((8 * W_DIR_LEN as u64, format!("directory length {dir_len}")));
    }
    let p = Parsed {
        published: word(W_PUBLISHED),
        drained: word(W_DRAINED),
        wal_number: word(W_WAL),
        base: word(W_BASE),
        ring,
        dir: &bytes[DIR_AT..DIR_AT + dir_len as usize],
    };
    if p.drained > p.published || p.published - p.drained > ring || p.base > p.drained {
        let why = format!(
            "inconsistent offsets: published {} drained {} base {}",
            p.published, p.drained, p.base
        );
        return Err((8 * W_PUBLISHED as u64, why));
    }
    Ok(p)
}

/// Writes the ring's undrained bytes at their place in the WAL and syncs it. The WAL must
/// exist (it is opened for writing without truncation or creation).
#[cfg(unix)]
fn write_tail(wal: &Path, bytes: &[u8], s: &Parsed<'_>) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(wal)?;
    let mut off = s.drained - s.base;
    let mut at = s.drained;
    while at < s.published {
        let start = (at % s.ring) as usize;
        let n = ((s.published - at) as usize).min(s.ring as usize - start);
        f.write_all_at(&bytes[HEADER + start..HEADER + start + n], off)?;
        off += n as u64;
        at += n as u64;
    }
    f.sync_data()
}

#[cfg(not(unix))]
fn write_tail(_: &Path, _: &[u8], _: &Parsed<'_>) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Removes the rings in `stage_dir` whose Db directory no longer exists (a crashed process's
/// Db, deleted since): nobody can recover them, and they hold memory. A ring whose directory
/// exists is never touched here: only that Db's next open may decide about it.
#[cfg(unix)]
pub(super) fn sweep_orphans(stage_dir: &Path) {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let Ok(entries) = std::fs::read_dir(stage_dir) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_name().as_bytes().starts_with(NAME_PREFIX.as_bytes()) {
            continue;
        }
        let mut head = vec![0u8; HEADER];
        let read = std::fs::File::open(e.path()).and_then(|mut f| f.read_exact(&mut head));
        let word =
            |i: usize| u64::from_le_bytes(head[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        if read.is_err() || word(W_MAGIC) != MAGIC {
            continue;
        }
        let len = word(W_DIR_LEN);
        if len == 0 || len > (HEADER - DIR_AT) as u64 {
            continue;
        }
        let dir = Path::new(std::ffi::OsStr::from_bytes(
            &head[DIR_AT..DIR_AT + len as usize],
        ));
        if dir.is_absolute() && !dir.exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(not(unix))]
pub(super) fn sweep_orphans(_: &Path) {}
