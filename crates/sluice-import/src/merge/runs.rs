//! Spilled runs: plain SSTs whose keys carry their source position, and the multi-level
//! merge that keeps the final merge's fan-in (memory, open files) bounded.

use std::path::{Path, PathBuf};

use sluice::{CompressionType, FileWrites, SstWriter, TableOptions};

use super::{Merger, RunSource, Source};

/// Options of spilled runs: no filter, no compression.
pub fn run_table_options() -> TableOptions {
    TableOptions {
        compression: CompressionType::None,
        bloom_bits_per_key: None,
        block_size: 64 << 10,
        ..TableOptions::default()
    }
}

/// Writes one run. A run key is the entry's key followed by its 8-byte big-endian source
/// position: keys of one index are prefix-free (every column encoding is), so this keeps the
/// (key, src) order and makes duplicate keys distinct, as an SST needs.
pub fn write_run(
    path: &Path,
    mut merger: Merger,
    writes: FileWrites,
) -> sluice::Result<Option<PathBuf>> {
    let mut w = SstWriter::create_with(path, run_table_options(), 1 << 20, writes)?;
    let mut key = Vec::new();
    while let Some(s) = merger.peek() {
        key.clear();
        key.extend_from_slice(s.key());
        key.extend_from_slice(&s.src().to_be_bytes());
        w.put(&key, s.value())?;
        merger.advance()?;
    }
    if w.entries() == 0 {
        drop(w);
        return Ok(None);
    }
    crate::failpoints::inject_at("import::spill", path)?;
    w.finish()?;
    Ok(Some(path.to_path_buf()))
}

/// Memory an open run costs a merge: its current 64 KiB data block (see
/// [`run_table_options`]), its index block, the table and iterator.
pub const RUN_READ_COST: usize = 96 << 10;

/// Fewest runs a merge reads at once: below this a multi-level merge makes little progress
/// per pass.
const MIN_FAN_IN: usize = 4;

/// How many runs one merge may read at once, and on how many threads merges run: bounded by
/// `memory` (bytes for read blocks) and by `open_files` (descriptors the merges may hold), with
/// up to `threads` merges side by side. When descriptors are short, fewer threads merge rather
/// than each reading fewer than [`MIN_FAN_IN`] runs; the fan-in is at least 2 (a pass must
/// shrink the run count) even if that exceeds `open_files`.
pub fn merge_fan_in(memory: usize, open_files: u64, threads: usize) -> (usize, usize) {
    let files = usize::try_from(open_files).unwrap_or(usize::MAX);
    let threads = threads.clamp(1, (files / MIN_FAN_IN).max(1));
    let by_memory = (memory / RUN_READ_COST / threads).max(MIN_FAN_IN);
    let by_files = (files / threads).max(2);
    (by_memory.min(by_files).min(4096), threads)
}

/// File descriptors an import may hold open for reading runs: half of what the process's
/// soft `RLIMIT_NOFILE` leaves after what else it holds (the Db, the final writers, the input,
/// stdio: 64, or half the limit when it is lower).
pub fn open_files_for_runs() -> u64 {
    #[cfg(unix)]
    {
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let soft = lim.current.unwrap_or(u64::MAX);
        soft.saturating_sub(64.min(soft / 2)) / 2
    }
    #[cfg(not(unix))]
    {
        256
    }
}

/// Multi-level merge: merges `runs` (of one index) in passes until at most `fan_in` are left,
/// so that the final merge reads a bounded number of runs whatever the number spilled —
/// memory (a read block per open run) and open files stay bounded. Each pass merges groups of
/// `fan_in` runs, the smallest first and only as many groups as needed, on up to `threads`
/// threads; a merged group becomes one run (keys keep their source positions, so the merge
/// order (key, source position) is unchanged) and its inputs are deleted, or moved to
/// `retired` when given (a checkpoint still names them: the caller deletes them once a newer
/// one does not). `name` makes the new runs' file names (`name(n)` for a fresh number `n`).
/// Returns the runs merged.
pub fn reduce_runs(
    runs: &mut Vec<(PathBuf, bool)>,
    fan_in: usize,
    threads: usize,
    name: &(dyn Fn() -> PathBuf + Sync),
    writes: FileWrites,
    mut retired: Option<&mut Vec<PathBuf>>,
) -> sluice::Result<u64> {
    let fan_in = fan_in.max(2);
    let delete_inputs = retired.is_none();
    let mut merged = 0u64;
    while runs.len() > fan_in {
        let n = runs.len();
        // Each group of `fan_in` runs takes `fan_in - 1` off the count.
        let needed = (n - fan_in).div_ceil(fan_in - 1);
        let groups = needed.min(n / fan_in).max(1);
        let take = (groups * fan_in).min(n);
        // The smallest runs first: the cheapest to rewrite; streamed final files last (merged
        // into a run, their entries' positions can no longer be looked up for messages).
        runs.sort_by_key(|(p, with_src)| (!*with_src, std::fs::metadata(p).map_or(0, |m| m.len())));
        let inputs: Vec<Vec<(PathBuf, bool)>> = runs
            .drain(..take)
            .collect::<Vec<_>>()
            .chunks(fan_in)
            .map(<[_]>::to_vec)
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let outputs: Vec<sluice::Result<Vec<(PathBuf, bool)>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.clamp(1, inputs.len()))
                .map(|_| {
                    s.spawn(|| -> sluice::Result<Vec<(PathBuf, bool)>> {
                        let mut out = Vec::new();
                        loop {
                            let g = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(group) = inputs.get(g) else {
                                return Ok(out);
                            };
                            let mut sources: Vec<Box<dyn Source>> = Vec::new();
                            for (p, with_src) in group {
                                sources.push(Box::new(RunSource::open(p, *with_src)?));
                            }
                            let path = name();
                            if let Some(p) = write_run(&path, Merger::new(sources), writes.clone())?
                            {
                                out.push((p, true));
                            }
                            for (p, _) in group.iter().filter(|_| delete_inputs) {
                                let _ = std::fs::remove_file(p);
                            }
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(sluice::Error::InvalidArgument(
                            "internal error: a run merge thread panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        for o in outputs {
            runs.extend(o?);
        }
        if let Some(r) = retired.as_deref_mut() {
            r.extend(inputs.into_iter().flatten().map(|(p, _)| p));
        }
        merged += take as u64;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_in_times_threads_stays_within_the_descriptors_when_they_are_short() {
        for files in [0u64, 1, 7, 8, 10, 20, 48, 96, 1000] {
            for threads in [1, 2, 3, 8, 16] {
                let (fan_in, t) = merge_fan_in(64 << 20, files, threads);
                assert!(t >= 1 && t <= threads, "{files} {threads}: {t}");
                assert!(fan_in >= 2, "{files} {threads}: {fan_in}");
                // Within the descriptors whenever they allow the minimum of 2 runs.
                if files >= 2 {
                    assert!(
                        (fan_in * t) as u64 <= files.max(2 * t as u64),
                        "{files} {threads}"
                    );
                }
            }
        }
        // Plenty of descriptors: every thread merges, the memory sets the fan-in.
        assert_eq!(merge_fan_in(96 << 20, 10_000, 4), (256, 4));
        // Short of memory but not of files: at least MIN_FAN_IN.
        assert_eq!(merge_fan_in(0, 10_000, 2), (MIN_FAN_IN, 2));
    }
}
