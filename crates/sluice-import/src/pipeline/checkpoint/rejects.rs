//! The rejects file at a resume: it must still hold what the checkpoint counted.

use std::path::Path;

use super::State;
use crate::pipeline::Import;
use crate::ImportError;

impl Import {
    /// The rejects file must still hold the bytes the checkpoint counted: the resumed run cuts
    /// it back to that length and appends, so a file lost or cut short (removed, or a power
    /// loss before its directory entry was durable) would otherwise come back zero-filled.
    pub(super) fn check_rejects(&self, dir: &Path, state: &State) -> Result<(), ImportError> {
        if state.rejects_len == 0 {
            return Ok(());
        }
        let Some(p) = self.opts.rejects.as_ref() else {
            return Ok(());
        };
        let now = std::fs::metadata(p).map(|m| m.len()).ok();
        if now.is_some_and(|n| n >= state.rejects_len) {
            let Some(want) = state.rejects_crc else {
                return Ok(());
            };
            let crc = crate::pipeline::merge::policy::prefix_crc(p, state.rejects_len)
                .map_err(|e| ImportError::io(p, e))?;
            if crc == Some(want) {
                return Ok(());
            }
            return Err(ImportError::CannotResume {
                dir: dir.to_path_buf(),
                reason: format!(
                    "the rejects file {} changed since the checkpoint (its first {} bytes have \
                     CRC32C {:08x}, {want:08x} then): import again without resume",
                    p.display(),
                    state.rejects_len,
                    crc.unwrap_or(0)
                ),
            });
        }
        Err(ImportError::CannotResume {
            dir: dir.to_path_buf(),
            reason: format!(
                "the rejects file {} holds {} bytes, {} at the checkpoint (it was removed or cut \
                 short since): import again without resume",
                p.display(),
                now.map_or_else(|| "no".to_string(), |n| n.to_string()),
                state.rejects_len
            ),
        })
    }
}
