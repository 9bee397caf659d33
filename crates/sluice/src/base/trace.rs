//! Per-operation traces: timed, nested spans and counters that each layer of a read or a write
//! appends to when the caller attached a [`Trace`] to its `ReadOptions` or `WriteOptions`
//! (CockroachDB's `EXPLAIN (TRACE)`, RocksDB's `PerfContext` with timings).
//!
//! Invariants:
//! 1. Zero cost when off: a layer holds an `Option<&Trace>` (or `Option<Trace>` inside an
//!    iterator) and does nothing but test it — no clock read, no allocation, no atomic — when
//!    it is `None`. Everything below happens only behind that check.
//! 2. Spans are recorded in the order they begin; a span's depth is the number of spans open
//!    on the trace when it began, so the rendering nests them like the call tree.
//! 3. A trace is one operation's (or one thread's sequence of operations'): it is `Send + Sync`
//!    behind a mutex only so that it can ride in options and iterators that are; it is never
//!    shared by concurrent operations in the engine.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A recording of one operation: spans (what each layer did, when, for how long) and counters
/// (entries stepped over, blocks read, …). Cheap to clone: clones share the recording.
///
/// ```
/// use sluice::{Db, Options, ReadOptions, Trace};
/// let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// let trace = Trace::new();
/// let ro = ReadOptions { trace: Some(&trace), ..Default::default() };
/// assert_eq!(db.get_opt(b"k", &ro).unwrap(), Some(b"v".to_vec()));
/// assert!(trace.render().contains("memtable probe"));
/// ```
#[derive(Clone, Default)]
pub struct Trace {
    inner: Arc<Mutex<Recording>>,
}

#[derive(Default)]
struct Recording {
    origin: Option<Instant>,
    spans: Vec<Span>,
    open: usize,
    counters: BTreeMap<&'static str, u64>,
}

/// One recorded span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// What the layer did ("memtable probe", "table 000012", "WAL write", …).
    pub name: String,
    /// Nesting depth (0 = an operation's root span).
    pub depth: usize,
    /// When it began, from the trace's first span.
    pub offset: Duration,
    /// How long it took (`None` while it is still open).
    pub duration: Option<Duration>,
    /// Facts the layer attached, in order (`filter=negative`, `cache=miss`, …).
    pub fields: Vec<(&'static str, String)>,
}

/// Identifies a span begun with [`Trace::begin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanId(usize);

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Begins a span nested under every span still open; end it with [`Trace::end`].
    pub fn begin(&self, name: impl Into<String>) -> SpanId {
        let now = Instant::now();
        let mut r = self.inner.lock();
        let origin = *r.origin.get_or_insert(now);
        let depth = r.open;
        r.open += 1;
        r.spans.push(Span {
            name: name.into(),
            depth,
            offset: now - origin,
            duration: None,
            fields: Vec::new(),
        });
        SpanId(r.spans.len() - 1)
    }

    /// Ends a span: its duration is the time since it began.
    pub fn end(&self, id: SpanId) {
        let now = Instant::now();
        let mut r = self.inner.lock();
        let origin = r.origin.unwrap_or(now);
        r.open = r.open.saturating_sub(1);
        if let Some(s) = r.spans.get_mut(id.0) {
            s.duration = Some((now - origin).saturating_sub(s.offset));
        }
    }

    /// Attaches a fact to a span.
    pub fn field(&self, id: SpanId, key: &'static str, value: impl fmt::Display) {
        if let Some(s) = self.inner.lock().spans.get_mut(id.0) {
            s.fields.push((key, value.to_string()));
        }
    }

    /// A span ended when the returned guard drops.
    pub fn span(&self, name: impl Into<String>) -> SpanGuard<'_> {
        SpanGuard {
            trace: self,
            id: self.begin(name),
        }
    }

    /// Adds `n` to a counter.
    pub fn count(&self, counter: &'static str, n: u64) {
        *self.inner.lock().counters.entry(counter).or_insert(0) += n;
    }

    /// A counter's value (0 if never counted).
    pub fn counter(&self, counter: &str) -> u64 {
        self.inner
            .lock()
            .counters
            .get(counter)
            .copied()
            .unwrap_or(0)
    }

    /// Every counter, by name.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner
            .lock()
            .counters
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// The spans recorded so far, in the order they began.
    pub fn spans(&self) -> Vec<Span> {
        self.inner.lock().spans.clone()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        let r = self.inner.lock();
        r.spans.is_empty() && r.counters.is_empty()
    }

    /// Forgets everything recorded (to reuse the trace for another operation).
    pub fn clear(&self) {
        *self.inner.lock() = Recording::default();
    }

    /// The longest root span's duration (what a sampler ranks operations by).
    pub fn total(&self) -> Duration {
        let r = self.inner.lock();
        r.spans
            .iter()
            .filter(|s| s.depth == 0)
            .filter_map(|s| s.duration.map(|d| s.offset + d))
            .max()
            .unwrap_or_default()
    }

    /// The trace as `EXPLAIN (TRACE)` prints it: one line per span, its offset and duration in
    /// milliseconds, indented by depth, its fields; then the counters.
    pub fn render(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.inner.lock();
        writeln!(f, "{:>10}  {:>10}  span", "offset ms", "dur ms")?;
        for s in &r.spans {
            let dur = s.duration.map_or_else(|| "open".to_string(), millis);
            write!(
                f,
                "{:>10}  {:>10}  {}{}",
                millis(s.offset),
                dur,
                "  ".repeat(s.depth),
                s.name
            )?;
            for (k, v) in &s.fields {
                write!(f, " {k}={v}")?;
            }
            writeln!(f)?;
        }
        if !r.counters.is_empty() {
            write!(f, "counters:")?;
            for (k, v) in &r.counters {
                write!(f, " {k}={v}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Trace({} spans)", self.inner.lock().spans.len())
    }
}

fn millis(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// Ends its span on drop. Obtain one with [`Trace::span`] or [`span`].
pub struct SpanGuard<'t> {
    trace: &'t Trace,
    id: SpanId,
}

impl SpanGuard<'_> {
    /// Attaches a fact to the span.
    pub fn field(&self, key: &'static str, value: impl fmt::Display) {
        self.trace.field(self.id, key, value);
    }
}

impl Drop for SpanGuard<'_> {
    fn drop(&mut self) {
        self.trace.end(self.id);
    }
}

/// A span when tracing, nothing otherwise: the one check a layer makes (invariant 1).
pub fn span<'t>(trace: Option<&'t Trace>, name: impl FnOnce() -> String) -> Option<SpanGuard<'t>> {
    trace.map(|t| t.span(name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_nest_and_render_with_fields_and_counters() {
        let t = Trace::new();
        {
            let root = t.span("get");
            root.field("key", "k");
            let inner = t.span("memtable probe");
            inner.field("result", "miss");
            drop(inner);
            t.count("entries", 3);
            t.count("entries", 1);
        }
        let spans = t.spans();
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[0].depth, spans[1].depth), (0, 1));
        assert!(spans.iter().all(|s| s.duration.is_some()));
        assert_eq!(t.counter("entries"), 4);
        let text = t.render();
        assert!(text.contains("get key=k"), "{text}");
        assert!(text.contains("    memtable probe result=miss"), "{text}");
        assert!(text.contains("counters: entries=4"), "{text}");
        t.clear();
        assert!(t.is_empty());
    }

    #[test]
    fn no_trace_records_nothing() {
        let g = span(None, || unreachable!("the name is not built when off"));
        assert!(g.is_none());
    }
}
