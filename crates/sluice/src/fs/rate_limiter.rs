//! A byte rate shared by the files that hold it: writers ask before each write and are paced so
//! that, together, they write no faster than the rate (RocksDB's `RateLimiter` idea, for a bulk
//! writer that must leave disk bandwidth to others).
//!
//! Pacing, not a bucket of saved-up tokens: each request reserves the next `n / rate` seconds
//! of a shared timeline and waits until its reservation begins. Idle time is not saved up, so
//! there is no burst after a pause; a request never waits longer than the requests reserved
//! before it take at the rate. Writers split large writes ([`RateLimiter::MAX_REQUEST`]) so one
//! reservation never covers a long burst of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Paces writes to `bytes_per_sec` across every thread and file that shares it (an `Arc`).
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_sec: u64,
    /// When the next reservation may begin; `None` before the first request.
    next: Mutex<Option<Instant>>,
    /// Bytes requested so far.
    requested: AtomicU64,
}

impl RateLimiter {
    /// Largest write a paced file passes to the OS at once (1 MiB); larger writes are split.
    pub const MAX_REQUEST: usize = 1 << 20;

    /// A limiter of `bytes_per_sec` bytes a second (at least 1).
    pub fn new(bytes_per_sec: u64) -> RateLimiter {
        RateLimiter {
            bytes_per_sec: bytes_per_sec.max(1),
            next: Mutex::new(None),
            requested: AtomicU64::new(0),
        }
    }

    /// The rate, bytes a second.
    pub fn bytes_per_sec(&self) -> u64 {
        self.bytes_per_sec
    }

    /// Bytes requested through this limiter so far, by every holder.
    pub fn bytes_requested(&self) -> u64 {
        self.requested.load(Ordering::Relaxed)
    }

    /// Waits until `bytes` more may be written.
    pub fn request(&self, bytes: u64) {
        let now = Instant::now();
        let start = self.reserve(bytes, now);
        if start > now {
            std::thread::sleep(start - now);
        }
    }

    /// Reserves `bytes`' share of the timeline as of `now`: returns when it begins (`now` or
    /// the end of the reservations before it, whichever is later).
    fn reserve(&self, bytes: u64, now: Instant) -> Instant {
        // A poisoned lock holds only an `Instant`, which is always valid.
        self.requested.fetch_add(bytes, Ordering::Relaxed);
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let start = match *next {
            Some(t) if t > now => t,
            _ => now,
        };
        // No `Instant` holds a sum past its range; such a request (years at any real rate)
        // then waits for the ones before it only.
        *next = Some(start.checked_add(self.duration_of(bytes)).unwrap_or(start));
        start
    }

    /// How long `bytes` take at the rate.
    fn duration_of(&self, bytes: u64) -> Duration {
        let nanos = u128::from(bytes) * 1_000_000_000 / u128::from(self.bytes_per_sec);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_follow_one_another_at_the_rate() {
        let l = RateLimiter::new(1_000_000);
        let t0 = Instant::now();
        assert_eq!(
            l.reserve(500_000, t0),
            t0,
            "the first request starts at once"
        );
        let ms = Duration::from_millis;
        assert_eq!(l.reserve(1_000_000, t0), t0 + ms(500));
        assert_eq!(l.reserve(1, t0 + ms(100)), t0 + ms(1500));
        // Requests from many threads share one timeline: the sum of their shares.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        l.reserve(1_000, t0);
                    }
                });
            }
        });
        assert_eq!(l.bytes_requested(), 1_500_001 + 400_000);
        let after = l.reserve(0, t0);
        assert_eq!(after, t0 + ms(1500) + Duration::from_micros(1) + ms(400));
    }

    #[test]
    fn idle_time_is_not_saved_up() {
        let l = RateLimiter::new(1_000);
        let t0 = Instant::now();
        l.reserve(1_000, t0);
        let later = t0 + Duration::from_secs(10);
        assert_eq!(l.reserve(1_000, later), later);
        assert_eq!(
            l.reserve(1, later),
            later + Duration::from_secs(1),
            "the second request after the pause waits for the first"
        );
    }

    #[test]
    fn extreme_rates_and_sizes_do_not_overflow() {
        let l = RateLimiter::new(0);
        assert_eq!(l.bytes_per_sec(), 1);
        assert_eq!(l.duration_of(u64::MAX), Duration::from_nanos(u64::MAX));
        let t0 = Instant::now();
        l.reserve(u64::MAX, t0);
        l.reserve(u64::MAX, t0);
        let fast = RateLimiter::new(u64::MAX);
        assert_eq!(fast.duration_of(u64::MAX), Duration::from_secs(1));
        assert_eq!(fast.reserve(1, t0), t0);
    }
}
