//! Short-lived helper threads for an import's I/O-bound steps (finishing files, checksums,
//! deleting runs, writing a spill's runs).

/// Runs `work` on the calling thread and on up to `n - 1` more scoped threads, and returns once
/// every copy has returned. `work` takes its jobs from a shared queue until it is empty, so a
/// thread the system cannot create (a thread limit, no memory) is skipped rather than a panic:
/// the caller and the threads that did start take its share.
pub(crate) fn on_threads(n: usize, work: impl Fn() + Sync) {
    std::thread::scope(|s| {
        for _ in 1..n {
            if std::thread::Builder::new().spawn_scoped(s, &work).is_err() {
                break;
            }
        }
        work();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[test]
    fn every_job_runs_once_on_up_to_n_threads() {
        for n in [1, 2, 5] {
            let next = AtomicUsize::new(0);
            let done = Mutex::new(Vec::new());
            let threads = Mutex::new(std::collections::HashSet::new());
            on_threads(n, || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= 100 {
                    return;
                }
                threads.lock().unwrap().insert(std::thread::current().id());
                done.lock().unwrap().push(i);
            });
            let mut done = done.into_inner().unwrap();
            done.sort_unstable();
            assert_eq!(done, (0..100).collect::<Vec<_>>());
            assert!(threads.into_inner().unwrap().len() <= n);
        }
    }
}
