//! Named points where tests make the writing of external table files ([`crate::SstWriter`])
//! fail: the `failpoints` cargo feature, built on the `fail` crate (without it nothing here is
//! compiled in, and [`crate::fs::SyncingFile`] carries no extra field).
//!
//! A point fires only for a file in a directory whose name starts with the prefix after `@`
//! in its action, so that a test can aim at one writer's files (an import's
//! `sluice-resume-*` directory) while other writers in the process (a workload's ingests, the
//! engine's own tables, which never pass through here) go on:
//! - `sst_writer::write`, action `return(torn@PREFIX)`: the write writes the first half of its
//!   buffer, then fails with EIO — a torn write, the file left with a partial block.
//! - `sst_writer::sync`, action `return(eio@PREFIX)`: the file's fsync fails with EIO (after
//!   which nothing in it may be trusted).

/// Every point.
pub const POINTS: &[&str] = &["sst_writer::write", "sst_writer::sync"];

/// Whether point `name` fires for the file at `path` (see the module doc).
#[cfg(feature = "failpoints")]
pub(crate) fn fires(name: &str, path: Option<&std::path::Path>) -> bool {
    let Some(path) = path else {
        return false;
    };
    let Some(arg) = fail::eval(name, |arg| arg).flatten() else {
        return false;
    };
    let prefix = arg.split_once('@').map_or("", |(_, p)| p);
    let hit = path
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with(prefix));
    if hit {
        FIRED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    hit
}

#[cfg(feature = "failpoints")]
static FIRED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times a point fired on a file it was aimed at, in this process (0 without the
/// `failpoints` feature).
pub fn fired() -> u64 {
    #[cfg(feature = "failpoints")]
    return FIRED.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(feature = "failpoints"))]
    0
}

/// The error a point fails with: EIO.
#[cfg(feature = "failpoints")]
pub(crate) fn injected() -> std::io::Error {
    std::io::Error::from_raw_os_error(5)
}
