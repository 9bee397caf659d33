//! Short-lived helper threads for an import's I/O-bound steps (finishing files, checksums,
//! deleting runs, writing a spill's runs).

use std::sync::Mutex;

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

/// Applies `f` to every item on up to `n` threads (the caller's among them; see
/// [`on_threads`]) and returns the results in the items' order. One item, or `n` ≤ 1: on the
/// calling thread alone.
pub(crate) fn map_on_threads<T: Send, R: Send>(
    n: usize,
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let len = items.len();
    if n <= 1 || len <= 1 {
        return items.into_iter().map(f).collect();
    }
    let queue = Mutex::new(items.into_iter().enumerate());
    let done: Mutex<Vec<Option<R>>> = Mutex::new((0..len).map(|_| None).collect());
    on_threads(n.min(len), || loop {
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
        let Some((i, item)) = job else { return };
        let r = f(item);
        done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
    });
    // Every copy of the loop returns only once the queue is empty, and a panic in `f`
    // unwinds out of `on_threads`: every slot holds its result.
    done.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

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

    #[test]
    fn map_keeps_the_items_order_on_any_number_of_threads() {
        for n in [0, 1, 2, 7, 200] {
            for len in [0, 1, 2, 100] {
                let items: Vec<u64> = (0..len).collect();
                let threads = Mutex::new(std::collections::HashSet::new());
                let out = map_on_threads(n, items, |x| {
                    threads.lock().unwrap().insert(std::thread::current().id());
                    x * 3 + 1
                });
                assert_eq!(out, (0..len).map(|x| x * 3 + 1).collect::<Vec<_>>());
                assert!(threads.into_inner().unwrap().len() <= n.max(1));
            }
        }
    }
}
