//! ASCII pictures of a version: every level, and L0 as its sublevels, drawn as key-span bars.
//!
//! Pure (a `&Version` in, text out), shared by the golden tests and `sluice lsm`. The x axis
//! is the sorted set of distinct user keys at file boundaries, spread evenly over the width, so
//! the picture shows overlap and stack depth, not key distances. A file is a bar `[--7--]`
//! from its smallest to its largest key (its number inside when it fits); a wide L0 file
//! ([`L0Sublevels::is_wide`]) is drawn with `=` and named at the end of its line.

use super::l0_sublevels::L0Sublevels;
use super::{FileMeta, Version, NUM_LEVELS};
use crate::base::error::escape_bytes;

/// Width of the line labels (`L0.12 `).
const LABEL: usize = 7;

/// Draws `version` in `width` columns of bars (plus labels): L0's sublevels newest first, then
/// L1..L6, then the key axis. Empty levels are left out.
pub fn render(version: &Version, width: usize) -> String {
    render_with(version, &L0Sublevels::from_version(version), width)
}

/// As [`render`], with L0 drawn from `sublevels` (built from the same version).
pub fn render_with(version: &Version, sublevels: &L0Sublevels, width: usize) -> String {
    let width = width.max(8);
    let mut keys: Vec<&[u8]> = version
        .levels
        .iter()
        .flatten()
        .flat_map(|f| [f.smallest_user(), f.largest_user()])
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return "(empty)\n".into();
    }
    let col = |k: &[u8]| {
        let rank = keys.binary_search(&k).unwrap_or(0);
        if keys.len() == 1 {
            0
        } else {
            rank * (width - 1) / (keys.len() - 1)
        }
    };
    let mut out = String::new();
    for (level, files) in sublevels.sublevel_files().iter().enumerate().rev() {
        let wide: Vec<String> = files
            .iter()
            .filter(|f| sublevels.is_wide(f.number))
            .map(|f| f.number.to_string())
            .collect();
        let line = bars(files, width, &col, |n| sublevels.is_wide(n));
        push_line(&mut out, &format!("L0.{level}"), &line, &wide);
    }
    for level in 1..NUM_LEVELS {
        if !version.levels[level].is_empty() {
            let line = bars(&version.levels[level], width, &col, |_| false);
            push_line(&mut out, &format!("L{level}"), &line, &[]);
        }
    }
    out.push_str(&axis(&keys, width, &col));
    out
}

fn push_line(out: &mut String, label: &str, line: &[u8], wide: &[String]) {
    let line = String::from_utf8_lossy(line);
    out.push_str(&format!("{label:<LABEL$}{}", line.trim_end()));
    if !wide.is_empty() {
        out.push_str(&format!("   wide: {}", wide.join(",")));
    }
    out.push('\n');
}

/// One line of bars for disjoint `files`.
fn bars(
    files: &[std::sync::Arc<FileMeta>],
    width: usize,
    col: &dyn Fn(&[u8]) -> usize,
    wide: impl Fn(u64) -> bool,
) -> Vec<u8> {
    let mut line = vec![b' '; width];
    for f in files {
        let (a, b) = (col(f.smallest_user()), col(f.largest_user()));
        if a == b {
            line[a] = b'|';
            continue;
        }
        let fill = if wide(f.number) { b'=' } else { b'-' };
        line[a] = b'[';
        line[b] = b']';
        line[a + 1..b].fill(fill);
        let label = f.number.to_string();
        let room = b - a - 1;
        if room >= label.len() + 2 {
            let at = a + 1 + (room - label.len()) / 2;
            line[at..at + label.len()].copy_from_slice(label.as_bytes());
        }
    }
    line
}

/// The key axis: each key written at its column when it does not run into the previous one.
fn axis(keys: &[&[u8]], width: usize, col: &dyn Fn(&[u8]) -> usize) -> String {
    let mut line = vec![b' '; width + 16];
    let mut free = 0;
    for k in keys {
        let text = escape_bytes(k);
        let at = col(k);
        if at >= free && at + text.len() <= line.len() {
            line[at..at + text.len()].copy_from_slice(text.as_bytes());
            free = at + text.len() + 1;
        }
    }
    let line = String::from_utf8_lossy(&line).trim_end().to_string();
    format!("{:LABEL$}{line}\n", "")
}

impl L0Sublevels {
    /// Draws L0 alone, one line per sublevel (see [`render`]).
    pub fn render(&self, width: usize) -> String {
        let mut v = Version::default();
        v.levels[0] = self.files().to_vec();
        render_with(&v, self, width)
    }
}
