//! Table commands: `sluice import`, `sluice tables`, and the table forms of `scan` and `get`.
//! Argument parsing and printing only; the work is `sluice_import`'s.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use sluice_import::{
    open_db_read_only, open_db_with, parse_size, Format, Import, ImportOptions, Layout,
    OnDuplicate, OutputFormat, ProgressMode, TableReader,
};

use crate::args::CmdResult;

/// Input formats on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// RFC 4180 CSV.
    Csv,
    /// Tab-separated, backslash escapes.
    Tsv,
    /// One JSON object per line.
    Jsonl,
    /// Apache Parquet (columns matched by name).
    Parquet,
}

/// `--on-duplicate`.
#[derive(Clone, Copy, ValueEnum)]
pub enum OnDuplicateArg {
    /// Fail (or reject the row under --max-errors).
    Error,
    /// Keep the first row; an existing row wins.
    First,
    /// Keep the last row; the input replaces an existing row.
    Last,
}

/// `--layout`.
#[derive(Clone, Copy, ValueEnum)]
pub enum LayoutArg {
    /// One KV per row.
    Row,
    /// Column chunks: each row group's values of a column in one compressed KV.
    Columnar,
    /// One KV per cell: key = table, column, primary key.
    Cells,
}

/// Output formats of table scans.
#[derive(Clone, Copy, ValueEnum, Default)]
pub enum OutArg {
    /// CSV with a header line.
    #[default]
    Csv,
    /// One JSON object per line.
    Json,
}

/// Arguments of `sluice import`.
#[derive(Args)]
pub struct ImportArgs {
    /// The database directory (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// SQL file with CREATE TABLE / CREATE INDEX statements.
    #[arg(long, required_unless_present = "primary_key")]
    schema: Option<PathBuf>,
    /// Without --schema: take the table's columns and types from the first (Parquet) file and
    /// make these columns its primary key (comma-separated).
    #[arg(long, conflicts_with = "schema", value_delimiter = ',')]
    primary_key: Vec<String>,
    /// Table to load (default: the schema's only table; without --schema, the first file's
    /// name without its extension).
    #[arg(long)]
    table: Option<String>,
    /// Input format (default: from the file extension; .gz/.zst are decompressed).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// The first line of each file names the columns.
    #[arg(long)]
    header: bool,
    /// Field delimiter (one character; `\t` for tab).
    #[arg(long)]
    delimiter: Option<String>,
    /// CSV quote character (`none` disables quoting).
    #[arg(long)]
    quote: Option<String>,
    /// This string means NULL, besides the format's own NULL (CSV: an unquoted empty field;
    /// TSV: \N; JSON: null): an unquoted CSV field, a TSV field or a JSON string equal to it.
    /// It may start with `-` (`--null -1`).
    #[arg(long, allow_hyphen_values = true)]
    null: Option<String>,
    /// Parse workers (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory budget, e.g. 512M, 2G (default: a quarter of RAM).
    #[arg(long)]
    memory: Option<String>,
    /// Directory for spilled runs (default: inside the Db directory).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// Run the import's threads at this nice value, 0..=19 (Linux), e.g. 19 beside a serving
    /// workload (default: the caller's priority).
    #[arg(long)]
    nice: Option<i32>,
    /// Run the import's threads under SCHED_IDLE (Linux): only when no other thread wants a
    /// CPU, preempted at once by any other (beside a serving workload: keeps its latency;
    /// can starve the import on a machine that is never idle), on at most all cores but one
    /// (--threads is capped). Overrides --nice.
    #[arg(long)]
    idle: bool,
    /// Write the import's files no faster than this many bytes a second, all threads
    /// together, e.g. 100M (to leave disk bandwidth to others; default: unpaced).
    #[arg(long, value_name = "SIZE")]
    write_rate: Option<String>,
    /// Bad rows tolerated (they go to --rejects) before the import fails.
    #[arg(long, default_value_t = 0)]
    max_errors: u64,
    /// File for rejected rows: `# file:line: reason` then the record (a failed import leaves
    /// its rows up to and including the one that failed it).
    #[arg(long)]
    rejects: Option<PathBuf>,
    /// Storage layout of a new table (default: the schema's `WITH (layout = ...)`, else row):
    /// `row` (one KV per row), `columnar` (column chunks of row groups) or `cells` (one KV
    /// per cell).
    #[arg(long, value_enum)]
    layout: Option<LayoutArg>,
    /// Rows whose primary key is taken by an earlier row or an existing one.
    #[arg(long, value_enum, default_value = "error")]
    on_duplicate: OnDuplicateArg,
    /// After an --on-duplicate last import into an existing columnar table, rewrite its row
    /// groups in which at least this share of the rows is deleted or replaced (as
    /// `sluice rewrite-groups` does), or `off` (default 0.5).
    #[arg(long, value_name = "SHARE|off")]
    rewrite_dead: Option<String>,
    /// Continue an interrupted import of the same files into the same table from its last
    /// checkpoint (kept in a sluice-resume-* directory in the Db directory or --tmp-dir);
    /// refused when the input, schema, table, Db or an output-affecting option changed.
    /// Without it, an interrupted import's checkpoint is discarded. Nothing to resume: the
    /// import starts over (refused into a row-id table that holds rows: it may have finished).
    #[arg(long)]
    resume: bool,
    /// Input read between checkpoints of the parse step, e.g. 256M (the default): a resumed
    /// import parses at most this much again.
    #[arg(long)]
    checkpoint_every: Option<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
    /// Input files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn one_byte(what: &str, s: &str) -> Result<u8, String> {
    let s = match s {
        "\\t" | "tab" => "\t",
        other => other,
    };
    match s.as_bytes() {
        [b] => Ok(*b),
        _ => Err(format!("--{what} must be one ASCII character, got {s:?}")),
    }
}

/// `CREATE TABLE` from the first input's columns (it must be Parquet) and `--primary-key`.
fn schema_from_input(a: &ImportArgs) -> Result<String, String> {
    let first = a.files.first().ok_or("no input files")?;
    let parquet = match a.format {
        Some(f) => matches!(f, FormatArg::Parquet),
        None => Format::from_path(first) == Format::Parquet,
    };
    if !parquet {
        return Err(format!(
            "{}: --primary-key without --schema takes the columns from a Parquet file; \
             give --schema for CSV, TSV and JSON lines",
            first.display()
        ));
    }
    sluice_import::arrow_io::parquet_table_sql(first, a.table.as_deref(), &a.primary_key)
        .map_err(with_flag_names)
}

impl ImportArgs {
    /// The database directory.
    pub fn db(&self) -> &std::path::Path {
        &self.db
    }
}

/// `sluice import`.
pub fn import(a: ImportArgs) -> CmdResult {
    if let (Some(r), Some(schema)) = (&a.rejects, &a.schema) {
        if sluice_import::same_file(r, schema) {
            return Err(format!(
                "--rejects {} is the schema file (the rejects file is emptied when the import starts)",
                r.display()
            )
            .into());
        }
    }
    let (schema, schema_name) = match &a.schema {
        Some(p) => (
            std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => (schema_from_input(&a)?, "--primary-key".to_string()),
    };
    let defaults = ImportOptions::default();
    // Where a failed import keeps its checkpoint for `--resume`, if not in the Db directory.
    let resume_dir = a.tmp_dir.clone();
    let opts = ImportOptions {
        table: a.table,
        format: a.format.map(|f| match f {
            FormatArg::Csv => Format::Csv,
            FormatArg::Tsv => Format::Tsv,
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::Parquet => Format::Parquet,
        }),
        header: a.header,
        delimiter: a
            .delimiter
            .as_deref()
            .map(|d| one_byte("delimiter", d))
            .transpose()?,
        quote: match a.quote.as_deref() {
            None => defaults.quote,
            Some("none") => None,
            Some(q) => Some(one_byte("quote", q)?),
        },
        null: a.null,
        threads: a.threads.unwrap_or(defaults.threads),
        memory: a
            .memory
            .as_deref()
            .map(parse_size)
            .transpose()?
            .unwrap_or(defaults.memory),
        tmp_dir: a.tmp_dir,
        nice: a.nice,
        idle: a.idle,
        rate_limiter: match a.write_rate.as_deref().map(parse_size).transpose() {
            Ok(None) => None,
            Ok(Some(0)) => return Err("--write-rate must be at least 1 byte a second".into()),
            Ok(Some(r)) => Some(std::sync::Arc::new(sluice::RateLimiter::new(r))),
            Err(e) => return Err(e.replace("--memory", "--write-rate").into()),
        },
        max_errors: a.max_errors,
        rejects: a.rejects,
        on_duplicate: match a.on_duplicate {
            OnDuplicateArg::Error => OnDuplicate::Error,
            OnDuplicateArg::First => OnDuplicate::First,
            OnDuplicateArg::Last => OnDuplicate::Last,
        },
        resume: a.resume,
        rewrite_dead: match a.rewrite_dead.as_deref() {
            None => defaults.rewrite_dead,
            Some("off") => None,
            Some(s) => Some(s.parse::<f64>().map_err(|_| {
                format!("--rewrite-dead {s:?} is neither a share in (0, 1] nor off")
            })?),
        },
        checkpoint_bytes: a
            .checkpoint_every
            .as_deref()
            .map(|s| parse_size(s).map_err(|e| e.replace("--memory", "--checkpoint-every")))
            .transpose()?
            .unwrap_or(defaults.checkpoint_bytes),
        layout: a.layout.map(|l| match l {
            LayoutArg::Row => Layout::Row,
            LayoutArg::Columnar => Layout::Columnar,
            LayoutArg::Cells => Layout::Cells,
        }),
        progress: if a.quiet || a.json {
            ProgressMode::Off
        } else {
            ProgressMode::Auto
        },
        ..defaults
    };
    let import = Import::new(&schema, a.files, opts).map_err(|e| match e {
        sluice_import::ImportError::Schema(s) if s.line > 0 && s.column > 0 => {
            format!("{}:{}:{}: {}", schema_name, s.line, s.column, s.message)
        }
        sluice_import::ImportError::Schema(s) if s.line > 0 => {
            format!("{}:{}: {}", schema_name, s.line, s.message)
        }
        sluice_import::ImportError::Schema(s) => format!("{}: {}", schema_name, s.message),
        other => with_flag_names(other),
    })?;
    for w in import.input_warnings() {
        eprintln!("warning: {w}");
    }
    clean_up_on_signals()?;
    let listeners = crate::db_dir::event_listeners()?;
    let new = crate::db_dir::new_db(&a.db);
    let db = open_db_with(&a.db, true, |o| o.listeners = listeners).map_err(|e| match e {
        sluice_import::ImportError::Db(e) => crate::db_dir::lock_message(&a.db, e),
        other => other.into(),
    })?;
    let s = match import.run(&db) {
        // The signal thread removed the files under it and is exiting the process with the
        // signal's status: report nothing of the errors that caused.
        Err(_) if INTERRUPTED.load(Ordering::SeqCst) => loop {
            std::thread::park();
        },
        Ok(s) => s,
        Err(e) => {
            // A Db this import created and left empty goes again, the path as it was, unless
            // a checkpoint kept for `--resume` outside it refers to it.
            let kept =
                |d: &std::path::Path| sluice_import::find_tmp_dirs(d).iter().any(|t| t.resumable);
            let new = new.filter(|_| !resume_dir.as_deref().is_some_and(kept));
            crate::db_dir::close_failed(new, db);
            return Err(with_flag_names(e).into());
        }
    };
    db.close()?;
    if let Some(e) = &s.small_file_merge_error {
        eprintln!(
            "warning: the import is committed, but merging the table's small files after it failed: {e}"
        );
    }
    if let Some(e) = &s.rewrite_error {
        eprintln!(
            "warning: the import is done, but rewriting the table's row groups with dead rows failed: {e}"
        );
    }
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let size = if s.bytes >= 1_000_000 {
        format!("{:.1} MB", s.bytes as f64 / 1e6)
    } else {
        format!("{:.1} KB", s.bytes as f64 / 1e3)
    };
    println!(
        "imported {} rows into {}{}{} ({size} in {:.2} s: {:.0} rows/s)",
        s.rows,
        s.table,
        if s.created { " (new table)" } else { "" },
        if s.resumed {
            " (resumed from a checkpoint)"
        } else {
            ""
        },
        s.total_secs,
        s.rows as f64 / s.total_secs.max(1e-9)
    );
    println!(
        "  phases: parse+sort {:.2} s, merge {:.2} s, ingest {:.2} s; runs spilled {} (premerged {}); sorted input streamed: {}",
        s.parse_sort_secs,
        s.merge_secs,
        s.ingest_secs,
        s.runs_spilled,
        s.runs_premerged,
        if s.streamed_indexes.is_empty() {
            "none".to_string()
        } else {
            s.streamed_indexes.join(", ")
        }
    );
    println!(
        "  rejected {}, duplicates dropped {}",
        s.rejected, s.duplicates_dropped
    );
    if let Some(r) = s.rewrite.filter(|r| r.groups_rewritten > 0) {
        println!(
            "  rewrote {} row groups with dead rows into {}: {} rows moved, {} dead rows' bytes given back ({} -> {} bytes)",
            r.groups_rewritten, r.groups_written, r.rows_moved, r.rows_dropped, r.bytes_before, r.bytes_after
        );
    }
    for f in &s.files {
        println!(
            "  file {:<20} L{}  {} entries  {} bytes",
            f.index,
            f.level.map_or("-".into(), |l| l.to_string()),
            f.entries,
            f.bytes
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Set by the signal thread before it removes the import's files.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// SIGINT, SIGTERM and SIGHUP end an import cleanly: a thread removes its temporary
/// directories (spilled runs and final files, possibly hundreds of MB) and exits the process
/// with 128 + the signal (130, 143, 129), as a shell reports a death by it. The Db needs no
/// cleanup: an import changes it only by its final, atomic ingest.
fn clean_up_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("sluice-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                INTERRUPTED.store(true, Ordering::SeqCst);
                // An ingest already running is let finish (briefly), so the message below
                // says truly whether the import is in the Db; none starts after this.
                let committed =
                    sluice_import::stop_commits_for_exit(std::time::Duration::from_secs(5));
                sluice_import::remove_tmp_dirs_for_exit();
                let name = match sig {
                    SIGINT => "SIGINT",
                    SIGTERM => "SIGTERM",
                    _ => "SIGHUP",
                };
                let msg = if committed.is_none() {
                    format!(
                        "sluice: import interrupted by {name} while its ingest was still \
                         running: it may or may not have committed. Look before running it \
                         again (`sluice scan`): if it did not, `sluice import --resume` with the \
                         same arguments continues it from its last checkpoint"
                    )
                } else if committed > Some(0) {
                    // Merging the table's small files or rewriting its row groups: compactions,
                    // recovered like any other, that change no row.
                    format!(
                        "sluice: interrupted by {name} after the import committed: its rows \
                         are in the Db. The tidying that follows the commit (merging the \
                         table's small files, rewriting row groups) was cut short; nothing \
                         needs resuming"
                    )
                } else {
                    format!(
                        "sluice: import interrupted by {name}; the Db is unchanged (an import \
                         changes it only by its final, atomic ingest). Its last checkpoint is \
                         kept (sluice-resume-* in the Db directory or --tmp-dir): `sluice \
                         import --resume` with the same arguments continues it, an import \
                         without --resume discards it"
                    )
                };
                // Not eprintln!: after a SIGHUP the terminal may be gone, and a failed write
                // must not keep this thread (which holds the commit gate) from the exit.
                let _ = writeln!(std::io::stderr(), "{msg}");
                std::process::exit(128 + sig);
            }
        })?;
    Ok(())
}

/// `sluice tables`.
pub fn tables(db: PathBuf) -> CmdResult {
    let db = open_db_read_only(&db)?;
    for t in TableReader::tables(&db)? {
        let cols: Vec<String> = t
            .visible_columns()
            .map(|(_, c)| {
                format!(
                    "{} {}{}",
                    c.name,
                    c.ty,
                    if c.not_null { " NOT NULL" } else { "" }
                )
            })
            .collect();
        let pk: Vec<&str> = t
            .primary_key
            .iter()
            .map(|&i| t.columns[i].name.as_str())
            .collect();
        println!("{} (id {}): {}", t.name, t.id, cols.join(", "));
        println!("  primary key ({})", pk.join(", "));
        println!("  layout {}", t.layout);
        for i in &t.indexes {
            let c: Vec<&str> = i
                .columns
                .iter()
                .map(|&c| t.columns[c].name.as_str())
                .collect();
            println!(
                "  {}index {} ({})",
                if i.unique { "unique " } else { "" },
                i.name,
                c.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Table options of `sluice scan`.
#[derive(Args, Default)]
pub struct TableScanArgs {
    /// Scan this table's rows instead of raw keys.
    #[arg(long)]
    pub table: Option<String>,
    /// In the order of this index (default: primary key).
    #[arg(long, requires = "table")]
    pub index: Option<String>,
    /// Output format of rows.
    #[arg(long, value_enum, requires = "table")]
    pub format: Option<OutArg>,
    /// With --count: also the sum of this numeric column (NULLs skipped; exact for integers
    /// and DECIMAL); `--count` itself is shared with the raw scan.
    #[arg(long, requires = "count", requires = "table")]
    pub sum: Option<String>,
    /// CSV output: write NULL as this string (default: an empty field; an empty string is
    /// always written `""`). Import the output with the same `--null` to read it back.
    #[arg(long, requires = "table")]
    pub null: Option<String>,
    /// Only these columns, in this order (comma-separated). A columnar table then reads only
    /// their chunks (and the index that orders the scan).
    #[arg(long, requires = "table", value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Rows in any order: a scan of a whole columnar table then reads only the chosen
    /// columns' chunks, in storage order (primary-key order within each import, imports in
    /// the order they were made), and no primary index. --count always may.
    #[arg(long, requires = "table")]
    pub any_order: bool,
    /// Print to stderr, as JSON, the bytes of index entries and chunks the scan read and the
    /// table's approximate bytes on disk.
    #[arg(long, requires = "table")]
    pub read_stats: bool,
}

/// `sluice scan --table T`.
pub fn scan(
    db: PathBuf,
    t: TableScanArgs,
    start: Option<String>,
    end: Option<String>,
    limit: Option<u64>,
    count: bool,
    trace: Option<&sluice::Trace>,
) -> CmdResult {
    let db = open_db_read_only(&db)?;
    let mut reader = TableReader::open(&db, t.table.as_deref())?;
    reader.set_trace(trace.cloned());
    if let Some(n) = &t.null {
        reader.set_csv_null(n)?;
    }
    reader.set_columns(t.columns.as_deref())?;
    reader.set_any_order(t.any_order);
    let fmt = match t.format.unwrap_or_default() {
        OutArg::Csv => OutputFormat::Csv,
        OutArg::Json => OutputFormat::Json,
    };
    let start = start.as_deref().map(sluice_import::query::split_values);
    let end = end.as_deref().map(sluice_import::query::split_values);
    if count {
        let col = match &t.sum {
            Some(name) => Some(
                reader
                    .table
                    .column(name)
                    .ok_or_else(|| format!("table {} has no column {name}", reader.table.name))?,
            ),
            None => None,
        };
        let cs = reader.count_sum(
            t.index.as_deref(),
            start.as_deref(),
            end.as_deref(),
            limit,
            col,
        )?;
        match cs.sum {
            None => println!("{{\"rows\": {}}}", cs.rows),
            Some(sum) => println!("{{\"rows\": {}, \"sum\": {}}}", cs.rows, sum.to_json()),
        }
        print_read_stats(&reader, t.read_stats)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    if fmt == OutputFormat::Csv {
        writeln!(out, "{}", reader.csv_header())?;
    }
    // One line buffer for the whole scan.
    let mut line = String::new();
    reader.scan(
        t.index.as_deref(),
        start.as_deref(),
        end.as_deref(),
        limit,
        |row| {
            line.clear();
            reader.format_row_into(row, fmt, &mut line);
            line.push('\n');
            out.write_all(line.as_bytes())
                .map_err(|e| sluice_import::ImportError::io(std::path::Path::new("<stdout>"), e))
        },
    )?;
    out.flush()?;
    print_read_stats(&reader, t.read_stats)?;
    Ok(ExitCode::SUCCESS)
}

/// `sluice delete --pk`: deletes one row of a table (synced); exit 1 when absent.
pub fn delete_row(db: PathBuf, table: Option<String>, pk: String) -> CmdResult {
    let db = crate::db_dir::open_writable(&db, false)?;
    let reader = TableReader::open(&db, table.as_deref())?;
    let pk = sluice_import::query::split_values(&pk);
    let found = reader.delete(&pk, true)?;
    drop(reader);
    db.close()?;
    if found {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("not found");
        Ok(ExitCode::from(1))
    }
}

/// `sluice rewrite-groups`: the rewrite's summary as one JSON object on stdout.
pub fn rewrite_groups(db: PathBuf, table: Option<String>, min_dead: f64) -> CmdResult {
    let db = crate::db_dir::open_writable(&db, false)?;
    let reader = TableReader::open(&db, table.as_deref())?;
    let s = reader.rewrite_groups(min_dead, true)?;
    let table = reader.table.name.clone();
    drop(reader);
    db.close()?;
    println!(
        "{}",
        serde_json::Value::Object(
            std::iter::once(("table".to_string(), serde_json::json!(table)))
                .chain(s.fields().map(|(k, v)| (k.to_string(), v.into())))
                .collect()
        )
    );
    Ok(ExitCode::SUCCESS)
}

/// `--read-stats`: what the scan read against the table's size, on stderr.
fn print_read_stats(reader: &TableReader<'_>, on: bool) -> Result<(), Box<dyn std::error::Error>> {
    if on {
        let table = reader.table_bytes()?;
        let read = reader.bytes_read();
        eprintln!(
            "{{\"bytes_read\": {read}, \"table_bytes\": {table}, \"fraction\": {:.4}}}",
            read as f64 / table.max(1) as f64
        );
    }
    Ok(())
}

/// `sluice get --table T --pk V,...`: the row as JSON; exit 1 when absent. `null`: what CSV
/// output writes for NULL.
pub fn get(
    db: PathBuf,
    table: Option<String>,
    pk: String,
    format: Option<OutArg>,
    null: Option<String>,
    trace: Option<&sluice::Trace>,
) -> CmdResult {
    let db = open_db_read_only(&db)?;
    let mut reader = TableReader::open(&db, table.as_deref())?;
    reader.set_trace(trace.cloned());
    if let Some(n) = &null {
        reader.set_csv_null(n)?;
    }
    let pk = sluice_import::query::split_values(&pk);
    match reader.get(&pk)? {
        Some(row) => {
            match format.unwrap_or(OutArg::Json) {
                OutArg::Json => println!("{}", reader.format_row(&row, OutputFormat::Json)),
                OutArg::Csv => {
                    println!("{}", reader.csv_header());
                    println!("{}", reader.format_row(&row, OutputFormat::Csv));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("not found");
            Ok(ExitCode::from(1))
        }
    }
}

/// The library names options by their `ImportOptions` field; the CLI by its flags.
fn with_flag_names(e: sluice_import::ImportError) -> String {
    match e {
        sluice_import::ImportError::InvalidOption { option, reason } => {
            format!("--{} {reason}", option.replace('_', "-"))
        }
        sluice_import::ImportError::TooManyErrors { count, last } => {
            format!("{count} bad rows, more than --max-errors allows; the last: {last}")
        }
        sluice_import::ImportError::CannotResume { dir, reason } => format!(
            "cannot resume from the checkpoint in {}: {reason}; nothing was imported (an \
             import without --resume starts over and discards the checkpoint)",
            dir.display()
        ),
        sluice_import::ImportError::DiskFull {
            dir,
            needed,
            available,
            kept,
            source,
        } => {
            let mut m = format!(
                "{}: {source}: the import needs about {} there ({needed} bytes), {} are free; \
                 free space there or give --tmp-dir on another filesystem",
                dir.display(),
                human(needed),
                human(available),
            );
            if kept > 0 {
                m += &format!(
                    ", then run the same import with --resume: {} of finished work is kept \
                     for it (an import without --resume discards it)",
                    human(kept)
                );
            } else {
                m += "; the import's temporary files are removed";
            }
            m
        }
        other => other.to_string(),
    }
}

/// `1.5 GiB`, `300 KiB`, `12 bytes`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
    }
}
