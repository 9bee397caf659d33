//! [`JsonLinesListener`]: every event as one JSON object per line.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::{
    CompactionInfo, Event, EventListener, FlushInfo, FlushInput, IngestInfo, StallCause,
    TableFileInfo, WriteStallInfo,
};

/// Writes each event as one JSON object on its own line, flushed at once (a `tail -f` or a
/// crash sees every event delivered so far).
///
/// Every object has `"event"` (the [`Event::name`]) and `"time_us"` (microseconds since the
/// Unix epoch, when it happened), then the fields of its info struct in snake case: durations
/// as `duration_us`, keys as lowercase hex (`smallest_key`, `largest_key`), tables as objects
/// (`number`, `level`, `size`, keys, seqnos); keys of an object in alphabetical order. For
/// example:
///
/// ```text
/// {"bytes_written":4096,"duration_us":812,"error":null,"event":"flush_end",
///  "input":{"kind":"memtable",…},"job_id":3,"outputs":[{"level":0,"number":12,…}],
///  "time_us":1718000000123456}
/// ```
///
/// A failed write to the file is reported once on stderr; later events are still attempted.
pub struct JsonLinesListener {
    out: Mutex<(Box<dyn Write + Send>, bool)>,
}

impl std::fmt::Debug for JsonLinesListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonLinesListener")
    }
}

impl JsonLinesListener {
    /// Appends to `path`, creating it if needed.
    pub fn create(path: &Path) -> std::io::Result<JsonLinesListener> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(JsonLinesListener::new(Box::new(f)))
    }

    /// Writes to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> JsonLinesListener {
        JsonLinesListener {
            out: Mutex::new((out, false)),
        }
    }
}

impl EventListener for JsonLinesListener {
    fn on_event(&self, event: &Event) {
        let mut line = event_json(event).to_string();
        line.push('\n');
        let mut out = self.out.lock();
        let r = out.0.write_all(line.as_bytes()).and_then(|_| out.0.flush());
        if let Err(e) = r {
            if !out.1 {
                out.1 = true;
                eprintln!("sluice: cannot write events: {e}");
            }
        }
    }
}

/// The JSON object of an event (what [`JsonLinesListener`] writes on one line).
pub fn event_json(event: &Event) -> Value {
    let mut m = Map::new();
    m.insert("event".into(), event.name().into());
    m.insert("time_us".into(), micros_since_epoch(event.time()).into());
    let body = match event {
        Event::FlushBegin(i) | Event::FlushEnd(i) => flush_json(i),
        Event::CompactionBegin(i) | Event::CompactionEnd(i) => compaction_json(i),
        Event::Ingest(i) => ingest_json(i),
        Event::WriteStallBegin(i) | Event::WriteStallEnd(i) => stall_json(i),
        Event::BackgroundError(i) => json!({ "message": i.message }),
        Event::TableFileCreated(i) => json!({
            "number": i.number,
            "size": i.size,
            "level": i.level,
            "path": i.path.display().to_string(),
            "reason": i.reason.name(),
            "job_id": i.job_id,
        }),
        Event::TableFileDeleted(i) => json!({
            "number": i.number,
            "path": i.path.display().to_string(),
            "reason": i.reason.name(),
        }),
    };
    if let Value::Object(fields) = body {
        m.extend(fields);
    }
    Value::Object(m)
}

fn micros_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn table_json(t: &TableFileInfo) -> Value {
    json!({
        "number": t.number,
        "level": t.level,
        "size": t.size,
        "smallest_key": hex(&t.smallest_key),
        "largest_key": hex(&t.largest_key),
        "smallest_seqno": t.smallest_seqno,
        "largest_seqno": t.largest_seqno,
    })
}

fn tables_json(ts: &[TableFileInfo]) -> Value {
    ts.iter().map(table_json).collect()
}

fn flush_json(i: &FlushInfo) -> Value {
    let input = match &i.input {
        FlushInput::Memtable {
            wal_number,
            bytes,
            smallest_seqno,
            largest_seqno,
        } => json!({
            "kind": "memtable",
            "wal_number": wal_number,
            "bytes": bytes,
            "smallest_seqno": smallest_seqno,
            "largest_seqno": largest_seqno,
        }),
        FlushInput::IngestedTables { numbers } => {
            json!({ "kind": "ingested_tables", "numbers": numbers })
        }
        FlushInput::Recovery { wal_numbers } => {
            json!({ "kind": "recovery", "wal_numbers": wal_numbers })
        }
    };
    json!({
        "job_id": i.job_id,
        "input": input,
        "outputs": tables_json(&i.outputs),
        "bytes_written": i.bytes_written,
        "duration_us": micros(i.duration),
        "error": i.error,
    })
}

fn compaction_json(i: &CompactionInfo) -> Value {
    json!({
        "job_id": i.job_id,
        "kind": i.kind.name(),
        "score_x100": i.score_x100,
        "level": i.level,
        "output_level": i.output_level,
        "inputs": tables_json(&i.inputs),
        "outputs": tables_json(&i.outputs),
        "bytes_read": i.bytes_read,
        "bytes_written": i.bytes_written,
        "subcompactions": i.subcompactions,
        "duration_us": micros(i.duration),
        "error": i.error,
    })
}

fn ingest_json(i: &IngestInfo) -> Value {
    let files: Vec<Value> = i
        .files
        .iter()
        .map(|f| {
            json!({
                "source": f.source.display().to_string(),
                "table": f.table.as_ref().map(table_json),
                "entries": f.entries,
            })
        })
        .collect();
    json!({
        "files": files,
        "flushable": i.flushable,
        "write_batch": i.write_batch,
        "seqno": i.seqno,
        "duration_us": micros(i.duration),
    })
}

fn stall_json(i: &WriteStallInfo) -> Value {
    let cause = match &i.cause {
        StallCause::Memtables { count, limit } => json!({ "count": count, "limit": limit }),
        StallCause::L0Sublevels {
            sublevels,
            files,
            limit,
        } => json!({ "sublevels": sublevels, "files": files, "limit": limit }),
        StallCause::PendingCompactionBytes { bytes, limit } => {
            json!({ "bytes": bytes, "limit": limit })
        }
    };
    json!({
        "cause": i.cause.name(),
        "detail": cause,
        "stopped": i.stopped,
        "duration_us": micros(i.duration),
    })
}
