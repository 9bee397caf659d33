//! Named points where tests make an import's I/O fail (the `failpoints` cargo feature, built on
//! the `fail` crate; without the feature [`inject`] is an inlined `Ok(())`).
//!
//! Configure a point with `fail::cfg(name, action)`: `return(eio)` or `return(enospc)` fails
//! at once with that error; `3*off->return(enospc)` lets three calls through first. Each point
//! sits where the import has written part of its work (a half-written run or final file, some
//! runs, every file but not the ingest), so a failure there must leave the Db as it was and no
//! temporary file behind.

use std::io;
use std::path::Path;

/// Every point, in pipeline order.
pub const POINTS: &[&str] = &[
    "import::tmp_dir",    // making the import's temporary directory
    "import::input",      // opening an input file
    "import::spill",      // a sorted run written, before it is finished
    "import::run_read",   // opening a spilled run to merge it
    "import::final_file", // a final file written, before it is finished
    "import::catalog",    // the catalog entry's file
    "import::ingest",     // every file written, before the one ingest
];

/// How many times a point fired in this process (a test compares it before and after an
/// import: a fault that fired in an import that then succeeded was swallowed).
#[cfg(feature = "failpoints")]
pub fn fired() -> u64 {
    FIRED.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(feature = "failpoints")]
static FIRED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Fails with the error the point is configured to return, if it is.
#[cfg(feature = "failpoints")]
pub(crate) fn inject(name: &str) -> io::Result<()> {
    let Some(arg) = fail::eval(name, |arg| arg) else {
        return Ok(());
    };
    FIRED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Err(match arg.as_deref() {
        Some("enospc") => io::Error::from_raw_os_error(28),
        _ => io::Error::from_raw_os_error(5), // EIO
    })
}

/// Without the `failpoints` feature: never fails.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn inject(_name: &str) -> io::Result<()> {
    Ok(())
}

/// [`inject`] as the engine's error for `path`.
pub(crate) fn inject_at(name: &str, path: &Path) -> sluice::Result<()> {
    inject(name).map_err(|source| sluice::Error::Io {
        path: Some(path.to_path_buf()),
        source,
    })
}
