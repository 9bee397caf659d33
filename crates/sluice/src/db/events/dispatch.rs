//! The event queue and its dispatcher thread (guarantees in `events/mod.rs`).
//!
//! Invariants:
//! 1. `queue` is a leaf lock: it is taken under any other lock of the Db (`state`, `manifest`)
//!    only to push, and nothing else is locked while it is held; no listener runs under it.
//! 2. Only the dispatcher thread calls listeners, popping events in push order.
//! 3. After `close`, pushes are dropped and the thread has delivered every earlier event.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::{Event, EventListener};

/// A Db's event queue: empty and threadless when no listener is registered.
pub(crate) struct Events {
    /// `None` without listeners: nothing is ever enqueued.
    shared: Option<Arc<Shared>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    next_job: AtomicU64,
}

struct Shared {
    listeners: Vec<Arc<dyn EventListener>>,
    queue: Mutex<Queue>,
    cv: Condvar,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    closed: bool,
}

impl Events {
    /// Starts the dispatcher thread when `listeners` is not empty.
    pub(crate) fn start(listeners: &[Arc<dyn EventListener>]) -> Events {
        if listeners.is_empty() {
            return Events {
                shared: None,
                thread: Mutex::new(None),
                next_job: AtomicU64::new(1),
            };
        }
        let shared = Arc::new(Shared {
            listeners: listeners.to_vec(),
            queue: Mutex::new(Queue::default()),
            cv: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("sluice-events".into())
            .spawn(move || for_thread.dispatch())
            .expect("spawn event dispatcher");
        Events {
            shared: Some(shared),
            thread: Mutex::new(Some(thread)),
            next_job: AtomicU64::new(1),
        }
    }

    /// Some listener is registered. The only cost events add where none is.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// Enqueues the event `make` builds; `make` runs only when a listener is registered.
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        if let Some(shared) = &self.shared {
            shared.push(make());
        }
    }

    /// A new job id (flushes and compactions share the sequence).
    pub(crate) fn new_job_id(&self) -> u64 {
        self.next_job.fetch_add(1, Ordering::Relaxed)
    }

    /// Delivers every event enqueued so far, then stops the thread; later events are dropped.
    /// Idempotent.
    pub(crate) fn close(&self) {
        let Some(shared) = &self.shared else {
            return;
        };
        shared.queue.lock().closed = true;
        shared.cv.notify_all();
        let Some(t) = self.thread.lock().take() else {
            return;
        };
        // A listener dropping the last handle of its own Db closes it on the event thread:
        // never join oneself (the thread delivers what is queued, then ends).
        if t.thread().id() != std::thread::current().id() {
            // A listener that panicked has already stopped the thread; nothing to report.
            let _ = t.join();
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn push(&self, event: Event) {
        let mut q = self.queue.lock();
        if q.closed {
            return;
        }
        q.events.push_back(event);
        drop(q);
        self.cv.notify_one();
    }

    /// The dispatcher thread: pop in order, call every listener with no lock held.
    fn dispatch(&self) {
        loop {
            let event = {
                let mut q = self.queue.lock();
                loop {
                    if let Some(e) = q.events.pop_front() {
                        break e;
                    }
                    if q.closed {
                        return;
                    }
                    self.cv.wait(&mut q);
                }
            };
            for l in &self.listeners {
                l.on_event(&event);
            }
        }
    }
}
