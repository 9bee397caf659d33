//! Recovery of a WAL stage's ring after a crash, and the sweep of rings whose Db is gone
//! (see the parent module's "Recovery").

use std::io;
use std::path::{Path, PathBuf};

use super::{
    ring_made_for, DIR_AT, HEADER, MAGIC, MARKER, MAX_RING, NAME_PREFIX, VERSION, W_BASE,
    W_DIR_DEV, W_DIR_INO, W_DIR_LEN, W_DRAINED, W_ID, W_MAGIC, W_PUBLISHED, W_RING, W_VERSION,
    W_WAL,
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
/// (`wal_path(number)`), syncs it, then removes the marker, and the ring if it is this
/// directory's. `None`: no marker.
/// - A ring still locked is a live process's: this directory is a copy of its Db. Its marker
///   goes; the ring is not read.
/// - A ring that is gone (a reboot, or `/dev/shm` torn down with a container) or that is not
///   a regular file of this user (anyone may make files in `/dev/shm`; ours are made
///   `O_EXCL`) is no ring of ours: the marker goes.
/// - A ring made for another directory (by device and inode: the Db was copied after its
///   crash) is written to this WAL all the same — it is the same history — and left in place
///   for the original, until the orphan sweep finds its path gone with nothing undrained. A
///   Db moved after its crash is the same directory: its ring is removed here.
/// - A corrupt marker or header, an id that does not match, or undrained bytes for a WAL
///   that is missing or shorter than the ring says are errors naming the file and offset: the
///   Db is not opened, since those bytes may be acknowledged writes.
pub fn recover(
    db_dir: &Path,
    stage_dir: &Path,
    wal_path: impl Fn(u64) -> PathBuf,
) -> Result<Option<Recovered>, StageError> {
    let marker = db_dir.join(MARKER);
    let io_err = |p: &Path, e: io::Error| StageError::Io(p.to_path_buf(), e);
    let Some((name, id)) = read_marker(db_dir)? else {
        return Ok(None);
    };
    let ring_path = stage_dir.join(name);
    let remove_marker = || std::fs::remove_file(&marker).map_err(|e| io_err(&marker, e));
    let Some(mut ring) = open_ring(&ring_path).map_err(|e| io_err(&ring_path, e))? else {
        remove_marker()?;
        return Ok(Some(Recovered::default()));
    };
    if !lock_shared(&ring) {
        remove_marker()?;
        return Ok(None);
    }
    let len = ring.metadata().map_err(|e| io_err(&ring_path, e))?.len();
    if len > (HEADER + MAX_RING) as u64 {
        let why = format!("{len} bytes: too large for a stage");
        return Err(StageError::Corrupt(ring_path, 0, why));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    io::Read::read_to_end(&mut ring, &mut bytes).map_err(|e| io_err(&ring_path, e))?;
    let corrupt = |(at, why): (u64, String)| StageError::Corrupt(ring_path.clone(), at, why);
    let stage = parse(&bytes, id).map_err(corrupt)?;
    let mut done = Recovered::default();
    if stage.published > stage.drained {
        let wal = wal_path(stage.wal_number);
        let missing = stage.published - stage.drained;
        let have = match std::fs::metadata(&wal) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let why = format!("{missing} bytes for WAL {}, which is gone", wal.display());
                return Err(corrupt((8 * W_WAL as u64, why)));
            }
            Err(e) => return Err(io_err(&wal, e)),
        };
        if have < stage.drained - stage.base {
            let why = format!(
                "{} bytes of WAL {} drained, but it holds {have}",
                stage.drained - stage.base,
                wal.display()
            );
            return Err(corrupt((8 * W_DRAINED as u64, why)));
        }
        write_tail(&wal, &bytes, &stage).map_err(|e| io_err(&wal, e))?;
        done = Recovered {
            bytes: missing,
            wal_number: stage.wal_number,
        };
    }
    if ring_made_for(stage.dir_id, || Some(stage.dir.to_vec()), db_dir) {
        std::fs::remove_file(&ring_path).map_err(|e| io_err(&ring_path, e))?;
    }
    remove_marker()?;
    Ok(Some(done))
}

/// The ring's file name and id that the Db's marker `<db_dir>/WAL-STAGE` holds; `None`: no
/// marker.
pub(super) fn read_marker(db_dir: &Path) -> Result<Option<(String, u64)>, StageError> {
    let marker = db_dir.join(MARKER);
    let name = match std::fs::read(&marker) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StageError::Io(marker, e)),
    };
    let parsed = String::from_utf8(name).ok().and_then(|n| {
        let hex = n.strip_prefix(NAME_PREFIX)?;
        let id = u64::from_str_radix(hex, 16)
            .ok()
            .filter(|_| hex.len() == 16)?;
        Some((n, id))
    });
    match parsed {
        Some(p) => Ok(Some(p)),
        None => Err(StageError::Corrupt(
            marker,
            0,
            "not a WAL stage's name".into(),
        )),
    }
}

/// Opens a ring for reading: `None` if it is gone, or is not a regular file of this user.
/// Never follows a symlink, never blocks on a FIFO.
#[cfg(unix)]
pub(super) fn open_ring(path: &Path) -> io::Result<Option<std::fs::File>> {
    open_ring_of(path, rustix::process::geteuid().as_raw())
}

/// [`open_ring`] for a ring that user `owner` made (a reader's: the owner of the Db's marker).
#[cfg(unix)]
pub(super) fn open_ring_of(path: &Path, owner: u32) -> io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: a symlink in its place, not ours.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let m = f.metadata()?;
    let ours = m.is_file() && m.uid() == owner;
    Ok(ours.then_some(f))
}

#[cfg(not(unix))]
pub(super) fn open_ring(path: &Path) -> io::Result<Option<std::fs::File>> {
    match std::fs::File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Takes a shared lock on a ring: false if a live stage holds it (exclusively).
#[cfg(unix)]
pub(super) fn lock_shared(f: &std::fs::File) -> bool {
    rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockShared).is_ok()
}

#[cfg(not(unix))]
pub(super) fn lock_shared(_: &std::fs::File) -> bool {
    true
}

/// Lets go of [`lock_shared`]'s lock.
#[cfg(unix)]
pub(super) fn unlock(f: &std::fs::File) {
    let _ = rustix::fs::flock(f, rustix::fs::FlockOperation::Unlock);
}

/// Header word `i` of a ring's bytes (0 past their end).
fn header_word(bytes: &[u8], i: usize) -> u64 {
    bytes
        .get(8 * i..8 * i + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

struct Parsed<'a> {
    published: u64,
    drained: u64,
    wal_number: u64,
    base: u64,
    ring: u64,
    dir: &'a [u8],
    dir_id: (u64, u64),
}

/// The header words a stage writes once, before its marker names it (so a reader of a live
/// ring may check them too): magic, version, the ring's length against the file's, and the
/// id the marker's name gives. `word(i)`: header word `i`. Returns the ring's length.
pub(super) fn check_header(
    word: impl Fn(usize) -> u64,
    file_len: u64,
    id: u64,
) -> Result<u64, (u64, String)> {
    if word(W_MAGIC) != MAGIC {
        return Err((0, "not a WAL stage (bad magic)".into()));
    }
    if word(W_VERSION) != VERSION {
        return Err((8, format!("unknown stage version {}", word(W_VERSION))));
    }
    let ring = word(W_RING);
    if ring == 0 || ring > MAX_RING as u64 || file_len != HEADER as u64 + ring {
        let why = format!("ring of {ring} bytes in a file of {file_len}");
        return Err((8 * W_RING as u64, why));
    }
    if word(W_ID) != id {
        let why = format!("ring id {:016x}, its name says {id:016x}", word(W_ID));
        return Err((8 * W_ID as u64, why));
    }
    Ok(ring)
}

/// The header of a ring read from its file, checked (`id`: the one the marker names).
fn parse(bytes: &[u8], id: u64) -> Result<Parsed<'_>, (u64, String)> {
    if bytes.len() < HEADER {
        return Err((0, "not a WAL stage (bad magic)".into()));
    }
    let ring = check_header(|i| header_word(bytes, i), bytes.len() as u64, id)?;
    let dir_len = header_word(bytes, W_DIR_LEN);
    if dir_len > (HEADER - DIR_AT) as u64 {
        return Err((8 * W_DIR_LEN as u64, format!("directory length {dir_len}")));
    }
    let p = Parsed {
        published: header_word(bytes, W_PUBLISHED),
        drained: header_word(bytes, W_DRAINED),
        wal_number: header_word(bytes, W_WAL),
        base: header_word(bytes, W_BASE),
        ring,
        dir: &bytes[DIR_AT..DIR_AT + dir_len as usize],
        dir_id: (header_word(bytes, W_DIR_DEV), header_word(bytes, W_DIR_INO)),
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

/// Removes the rings in `stage_dir` whose Db directory no longer exists at the path they
/// record and that hold nothing undrained (a crashed process's Db, deleted since): nobody
/// needs them, and they hold memory. A ring whose directory exists is never touched here: only
/// that Db's next open may decide about it. A ring with undrained bytes stays even when its
/// path is gone — its Db may have been moved, and finds it by device and inode — until that
/// Db is opened, or `/dev/shm` is cleared (a reboot); a Db deleted after a crash leaves it.
///
/// Also removed: a ring whose creation never finished (the process died between making the
/// file and writing its header: [`WalStage::create`](super::WalStage::create) names the ring
/// in a marker, and puts a record in it, only after the header). Its magic word, the
/// header's last store, is still zero, and it is unlocked and older than
/// [`UNFINISHED_RING_AGE`]: its maker locks it right after making it, and a maker stalled
/// that long between those two calls finds its ring's name gone once it has the lock and
/// refuses the ring. Left alone, each held its reserved bytes of memory until a reboot (a
/// process killed during `Db::open` leaves one).
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
        // Ours, a regular file, and not locked by a live stage (held while we look).
        let Ok(Some(mut f)) = open_ring(&e.path()) else {
            continue;
        };
        if !lock_shared(&f) {
            continue;
        }
        let mut head = Vec::with_capacity(HEADER);
        if (&mut f).take(HEADER as u64).read_to_end(&mut head).is_err() {
            continue;
        }
        // `init_header` never finished (it stores the magic last): no marker names the ring
        // and no record was put in it.
        if header_word(&head, W_MAGIC) == 0 {
            if unfinished_long_ago(&f) {
                let _ = std::fs::remove_file(e.path());
            }
            continue;
        }
        if head.len() < HEADER || header_word(&head, W_MAGIC) != MAGIC {
            continue;
        }
        let len = header_word(&head, W_DIR_LEN);
        if len == 0 || len > (HEADER - DIR_AT) as u64 {
            continue;
        }
        let dir = Path::new(std::ffi::OsStr::from_bytes(
            &head[DIR_AT..DIR_AT + len as usize],
        ));
        // Only a path that is certainly gone: an unreadable one (EACCES, EIO, a mount not
        // seen from here) may still hold the Db that needs this ring. And only a ring with
        // nothing undrained: its Db may have been moved after a crash (found again by device
        // and inode when it is opened), and those bytes are acknowledged writes.
        let gone =
            matches!(std::fs::symlink_metadata(dir), Err(e) if e.kind() == io::ErrorKind::NotFound);
        let drained = header_word(&head, W_PUBLISHED) == header_word(&head, W_DRAINED);
        if dir.is_absolute() && gone && drained {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(not(unix))]
pub(super) fn sweep_orphans(_: &Path) {}

/// How long an unlocked ring file without a header must have gone unchanged before the
/// sweep takes it for an unfinished creation.
pub(super) const UNFINISHED_RING_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// True if `f` was last changed over [`UNFINISHED_RING_AGE`] ago (false if that cannot be
/// told: a clock before the file's time, or no time at all).
#[cfg(unix)]
fn unfinished_long_ago(f: &std::fs::File) -> bool {
    f.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > UNFINISHED_RING_AGE)
}
