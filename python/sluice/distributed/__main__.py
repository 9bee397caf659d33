"""``python -m sluice.distributed import --engine ray|spark --db DIR --schema S.sql FILES...``:
``sluice import``'s input options, the files imported through Ray or Spark tasks, and the
same summary ``sluice import`` prints. ``jobs --db DIR`` lists the jobs kept for a rerun,
``abort --db DIR --job-id ID`` removes one."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional

from . import abort, import_files, jobs


def _share_or_off(s: str) -> Optional[float]:
    if s == "off":
        return None
    try:
        v = float(s)
    except ValueError:
        v = -1.0
    if not 0.0 < v <= 1.0:
        raise argparse.ArgumentTypeError(f"{s!r} is neither a share in (0, 1] nor off")
    return v


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sluice.distributed")
    sub = ap.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import", help="import files through Ray or Spark tasks")
    imp.add_argument("--engine", choices=["ray", "spark", "local"], default="ray")
    imp.add_argument("--db", required=True)
    imp.add_argument("--schema", required=True)
    imp.add_argument("--table")
    imp.add_argument("--workers", type=int)
    imp.add_argument("--ranges", type=int, help="ranges per index (default: 2 per worker)")
    imp.add_argument("--format", choices=["csv", "tsv", "jsonl", "parquet"])
    imp.add_argument("--header", action="store_true")
    imp.add_argument("--delimiter")
    imp.add_argument("--quote", default='"', help="quote character, or 'none'")
    imp.add_argument("--null")
    imp.add_argument("--on-duplicate", choices=["error", "first", "last"], default="error")
    imp.add_argument("--max-errors", type=int, default=0, help="bad rows tolerated (default 0)")
    imp.add_argument("--rejects", help="write rejected rows here")
    imp.add_argument("--job-id", help="name the job: a rerun with the same id resumes it")
    imp.add_argument("--work-dir", help="the job's directory's parent (default: the Db's)")
    imp.add_argument("--output", choices=["db", "files"], default="db")
    imp.add_argument("--out", help="with --output files: where the range sets go")
    imp.add_argument(
        "--rewrite-dead",
        type=_share_or_off,
        default=0.5,
        help="after a last job into a columnar table: rewrite the row groups with at least "
        "this share of replaced rows (default 0.5), or 'off'",
    )
    imp.add_argument("--json", action="store_true", help="print the summary as JSON")
    imp.add_argument("--no-progress", action="store_true", help="no progress bars")
    imp.add_argument("files", nargs="+")
    for name, what in [("jobs", "list the jobs kept for a rerun"), ("abort", "remove a kept job")]:
        p = sub.add_parser(name, help=what)
        p.add_argument("--db", required=True)
        p.add_argument("--work-dir")
        if name == "abort":
            p.add_argument("--job-id", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "jobs":
        for j in jobs(a.db, a.work_dir):
            print(j)
        return 0
    if a.cmd == "abort":
        found = abort(a.db, a.job_id, a.work_dir)
        print(f"job {a.job_id}: {'removed' if found else 'not found'}")
        return 0 if found else 1
    with open(a.schema) as f:
        schema = f.read()
    s = import_files(
        a.db,
        schema,
        a.files,
        engine=a.engine,
        workers=a.workers,
        format=a.format,
        header=a.header,
        delimiter=a.delimiter,
        quote=None if a.quote == "none" else a.quote,
        null=a.null,
        table=a.table,
        on_duplicate=a.on_duplicate,
        ranges=a.ranges,
        max_errors=a.max_errors,
        rejects=a.rejects,
        job_id=a.job_id,
        work_dir=a.work_dir,
        output=a.output,
        out_dir=a.out,
        progress=not (a.json or a.no_progress),
        rewrite_dead=a.rewrite_dead,
    )
    if a.json:
        print(json.dumps(s))
    else:
        print(summary_text(s))
    return 0


def summary_text(s: Dict[str, Any]) -> str:
    """``sluice import``'s summary of a distributed import (its phases are this import's)."""
    total = s["phases"]["total"]
    size = f"{s['bytes'] / 1e6:.1f} MB" if s["bytes"] >= 1_000_000 else f"{s['bytes'] / 1e3:.1f} KB"
    lines = [
        f"imported {s['rows']} rows into {s['table']}{' (new table)' if s['created'] else ''} "
        f"({size} in {total:.2f} s: {s['rows'] / max(total, 1e-9):.0f} rows/s)",
        "  phases: " + ", ".join(
            f"{k.replace('_', '+')} {v:.2f} s" for k, v in s["phases"].items() if k != "total"
        ) + f"; engine {s['engine']}, {s['ranges']} ranges an index, "
        f"{s['reused_ranges']} ranges reused",
        f"  rejected {s['rejected']}, duplicates dropped {s['duplicates_dropped']}",
    ]
    for f in s["files"]:
        index = f"index {f['slot']}" if f["kind"] == "index" else f["kind"]
        level = "-" if f["level"] is None else str(f["level"])
        lines.append(f"  file {index:<20} L{level}  {f['entries']} entries")
    r = s.get("rewrite")
    if r:
        lines.append(
            f"  rewrote {r['groups_rewritten']} of {r['groups_with_marks']} row groups with "
            f"replaced rows: {r['rows_dropped']} rows' bytes given back "
            f"({r['bytes_before']} -> {r['bytes_after']} bytes)"
        )
    if s.get("small_file_merge_error"):
        lines.append("  merging the table's small files failed (the import is committed): "
                     f"{s['small_file_merge_error']}")
    if s.get("rewrite_error"):
        lines.append(f"  the row-group rewrite failed (the import is committed): {s['rewrite_error']}")
    if "out_dir" in s:
        lines.append(f"  range sets in {s['out_dir']} (ranges.json)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
