//! Making the import's own files durable: directory fsyncs and whole-file replacement. A
//! file's data is durable after its fsync; its name only after its directory's.

use std::io::Write as _;
use std::path::Path;

use crate::ImportError;

/// Fsyncs the directory `dir` (the entries created, renamed or removed in it). A filesystem
/// that cannot fsync a directory (`EINVAL`, as some network and FUSE ones answer) is taken
/// as one whose entries are durable when written, and a directory this process may write
/// into but not open (mode `-wx`) is left as it is.
pub fn sync_dir(dir: &Path) -> Result<(), ImportError> {
    match std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if cannot_sync(&e) || e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        r => r.map_err(|e| ImportError::io(dir, e)),
    }
}

/// Fsyncs the data of `file` (at `path`, for errors): a pipe, a terminal or a character
/// device (`--rejects /dev/stdout`) cannot be, and need not.
pub fn sync_file(file: &std::fs::File, path: &Path) -> Result<(), ImportError> {
    match file.sync_data() {
        Err(e) if cannot_sync(&e) => Ok(()),
        r => r.map_err(|e| ImportError::io(path, e)),
    }
}

fn cannot_sync(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::Unsupported
    )
}

/// Fsyncs the directory holding `path` (the current directory for a bare name).
pub fn sync_parent(path: &Path) -> Result<(), ImportError> {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => sync_dir(d),
        _ => sync_dir(Path::new(".")),
    }
}

/// Creates the directory `path` and any missing parent, each new entry made durable (its
/// parent fsynced).
pub fn create_dir_all(path: &Path) -> Result<(), ImportError> {
    let mut missing = Vec::new();
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        missing.push(p);
        at = p.parent();
    }
    std::fs::create_dir_all(path).map_err(|e| ImportError::io(path, e))?;
    for p in missing.iter().rev() {
        sync_parent(p)?;
    }
    Ok(())
}

/// Writes `bytes` as the file `path`, durably and whole or not at all: a temporary file
/// beside it, fsynced, renamed over it, its directory fsynced.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), ImportError> {
    let name = path
        .file_name()
        .map_or_else(|| "file".to_string(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(ImportError::io(&tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| ImportError::io(path, e))?;
    sync_parent(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_file_writes_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ranges.json");
        replace_file(&p, b"one").unwrap();
        replace_file(&p, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two, longer");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        // A directory in the way: the error names the temporary file, none is left.
        let d = dir.path().join("sub");
        std::fs::create_dir(&d).unwrap();
        std::fs::create_dir(dir.path().join(".x.tmp")).unwrap();
        let e = replace_file(&dir.path().join("x"), b"y").unwrap_err();
        assert!(e.to_string().contains(".x.tmp"), "{e}");
        sync_parent(Path::new("bare-name")).unwrap();
        let deep = dir.path().join("a/b/c");
        create_dir_all(&deep).unwrap();
        assert!(deep.is_dir());
        create_dir_all(&deep).unwrap();
        // A pipe takes no fsync, and needs none.
        let (r, w) = std::io::pipe().unwrap();
        let w = std::fs::File::from(std::os::fd::OwnedFd::from(w));
        sync_file(&w, Path::new("pipe")).unwrap();
        drop(r);
    }
}
