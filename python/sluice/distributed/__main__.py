"""``python -m sluice.distributed import --engine ray|spark --db DIR --schema S.sql FILES...``:
``sluice import``'s input options, the files imported through Ray or Spark tasks."""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from . import import_files


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
    imp.add_argument("--json", action="store_true", help="print the summary as JSON")
    imp.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
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
        progress=not a.json,
    )
    if a.json:
        print(json.dumps(s))
    else:
        levels = sorted({f["level"] for f in s["files"]})
        print(
            f"imported {s['rows']} rows into {s['table']} with {s['engine']}: {len(s['files'])} "
            f"files at levels {levels}, {s['ranges']} ranges an index, "
            + ", ".join(f"{k} {v:.2f} s" for k, v in s["phases"].items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
