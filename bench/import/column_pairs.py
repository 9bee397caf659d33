#!/usr/bin/env python3
"""What share of a columnar table a two-column scan reads, for every pair of its columns.

    bench/import/column_pairs.py --db DB --table T [--sluice PATH] [--json OUT]

Scans each column once with `sluice scan --columns C --any-order --read-stats` and reads the
bytes it read (the column's chunks) and the table's bytes from the JSON line on stderr. A scan
of two columns reads the chunks of both and nothing else (check: `--check A,B` scans the pair
and compares), so a pair's share is the sum of its two columns' over the table's bytes.
Prints the columns' sizes, largest first, and how many of the pairs read at most 5% of the
table (issue 24's goal for a two-column scan of `hits`).
"""

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def read_stats(sluice, db, table, columns):
    """(bytes read, table bytes) of one scan of `columns`."""
    p = subprocess.run([sluice, "scan", "--db", db, "--table", table, "--read-stats",
                        "--columns", ",".join(columns), "--any-order"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    for line in p.stderr.splitlines():
        if line.startswith("{"):
            s = json.loads(line)
            return s["bytes_read"], s["table_bytes"]
    sys.exit(f"no --read-stats line from the scan of {columns}: {p.stderr.strip()}")


def table_columns(sluice, db, table):
    """The table's column names, from the header line of a one-row CSV scan."""
    p = subprocess.run([sluice, "scan", "--db", db, "--table", table, "--limit", "1"],
                       capture_output=True, text=True, check=True)
    return p.stdout.splitlines()[0].split(",")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--sluice", default=str(ROOT / "target/release/sluice"))
    ap.add_argument("--goal-pct", type=float, default=5.0)
    ap.add_argument("--check", help="A,B: scan this pair too and compare with the sum")
    ap.add_argument("--json", type=Path, help="write the per-column sizes here")
    a = ap.parse_args()
    cols = table_columns(a.sluice, a.db, a.table)
    size, total = {}, None
    for c in cols:
        size[c], total = read_stats(a.sluice, a.db, a.table, [c])
    pairs = [(size[x] + size[y]) / total for x, y in itertools.combinations(cols, 2)]
    pairs.sort()
    ok = sum(1 for f in pairs if f * 100 <= a.goal_pct)
    print(f"table {a.table}: {total / 1e6:.1f} MB, {len(cols)} columns, {len(pairs)} pairs")
    print(f"pairs reading <= {a.goal_pct:g}% of the table: {ok} ({100 * ok / len(pairs):.1f}%); "
          f"median pair {100 * pairs[len(pairs) // 2]:.2f}%, largest {100 * pairs[-1]:.2f}%")
    print("largest columns (MB, share of the table):")
    for c, b in sorted(size.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {c:24} {b / 1e6:8.2f}  {100 * b / total:5.2f}%")
    if a.check:
        pair = a.check.split(",")
        got, _ = read_stats(a.sluice, a.db, a.table, pair)
        want = sum(size[c.lower()] for c in pair)
        print(f"check {a.check}: scanned {got} bytes, the columns' sum {want}")
        if got != want:
            sys.exit("a pair's scan did not read exactly its two columns' chunks")
    if a.json:
        a.json.write_text(json.dumps({"table_bytes": total, "columns": size}, indent=1))


if __name__ == "__main__":
    main()
