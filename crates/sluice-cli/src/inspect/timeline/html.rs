//! The timeline page.

use std::path::Path;

use super::Loaded;

/// Writes the page.
pub fn write_page(_l: &Loaded, _path: &Path) -> std::io::Result<()> {
    Ok(())
}
