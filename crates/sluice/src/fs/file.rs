//! Positional reads from a table file, on disk or in memory.

use std::io;
use std::path::Path;
use std::sync::Arc;

/// A file that can be read at any offset by many threads at once.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; a short file is an `UnexpectedEof` error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The file's length in bytes.
    fn size(&self) -> io::Result<u64>;
}

impl RandomAccessFile for std::fs::File {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl RandomAccessFile for Vec<u8> {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// Opens a file on disk for positional reads.
pub fn open_file(path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
    Ok(Arc::new(std::fs::File::open(path)?))
}
