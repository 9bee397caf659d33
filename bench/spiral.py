#!/usr/bin/env python3
"""CockroachDB's import death spiral, reproduced and shown (issue 22, section 2).

Runs `sluice-bench l0-spiral` with L0 sublevels off (RocksDB's L0) and on, each with
`--events` and `--keep-db`, makes both pages with `sluice lsm --db DIR --html OUT.html`, takes a
PNG of each at its interesting step in headless chromium (tests/interop/cdp.py), and prints a
summary (JSON) with the stall counts and times from the events files:

    nice -n 10 cargo release-bins
    nice -n 10 python3 bench/spiral.py              # N = 3,000,000; out: bench/out/spiral
    python3 bench/spiral.py --n 300000 --img /tmp   # a quick look

Steps shown: sublevels off, the state just before the largest compaction out of L0 (the
tiny key-wide flush in L0, flagged, right before the compaction that takes it and the whole
base level); on, the step where L0 holds the most files (many narrow files in few sublevels).
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "interop"))


def stalls_from_events(path):
    """(count, total seconds, longest seconds) of write stalls: each write_stall_begin paired
    with the next write_stall_end."""
    count, total, longest, begin = 0, 0.0, 0.0, None
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "write_stall_begin":
            count += 1
            begin = e["time_us"] if begin is None else begin
        elif e["event"] == "write_stall_end" and begin is not None:
            d = (e["time_us"] - begin) / 1e6
            total, longest, begin = total + d, max(longest, d), None
    return count, total, longest


def compactions_out_of_l0(data):
    """(edit index, L0 files taken, of which wide, bytes in) of every compaction out of L0."""
    files = data["files"]
    out = []
    for i, e in enumerate(data["edits"]):
        if e["kind"] != "compaction":
            continue
        l0 = [files[f] for lvl, f in e["deleted"] if lvl == 0]
        if l0:
            out.append((i, len(l0), sum(1 for f in l0 if f.get("wide")), e["bytes_in"]))
    return out


def interesting_step(mode, data):
    series = data["series"]
    if mode == "off":
        taken = [c for c in compactions_out_of_l0(data) if c[2] > 0] or compactions_out_of_l0(data)
        return max(taken, key=lambda c: c[3])[0] - 1 if taken else len(data["edits"]) - 1
    files = series["l0_files"]
    return max(range(len(files)), key=lambda i: (files[i], -i))


def screenshot(page, step, png, width, height):
    from cdp import Browser
    b = Browser()
    try:
        b.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
               deviceScaleFactor=1, mobile=False)
        b.open(page.as_uri())
        b.eval(f"lsm.goTo({step})")
        b.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
               await_promise=True)
        assert b.eval("lsm.step()") == step
        b.screenshot(png)
        return b.errors
    finally:
        b.close()


def run(mode, args, bindir, out):
    d = out / mode
    shutil.rmtree(d, ignore_errors=True)
    (d / "tmp").mkdir(parents=True)
    events = d / "events.jsonl"
    cmd = [bindir / "sluice-bench", "l0-spiral", "--n", str(args.n), "--l0-sublevels", mode,
           "--keep-db", d / "db", "--events", events, "--dir", d / "tmp"]
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    line = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    page = d / "lsm.html"
    subprocess.run([bindir / "sluice", "lsm", "--db", d / "db", "--html", page], check=True)
    data = json.loads(subprocess.run([bindir / "sluice", "lsm", "--db", d / "db", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    step = interesting_step(mode, data)
    png = Path(args.img) / f"spiral-{mode}.png"
    errors = screenshot(page, step, png, args.width, args.height)
    count, total, longest = stalls_from_events(events)
    l0c = compactions_out_of_l0(data)
    biggest = max(l0c, key=lambda c: c[3]) if l0c else None
    return {
        "mode": mode, "wall_s": round(line["seconds"]["total"], 1),
        "import_s": round(line["seconds"]["import"], 1),
        "stalls": count, "stall_s": round(total, 2), "longest_stall_s": round(longest, 2),
        "metrics_stalls": line["stalls"], "metrics_stall_s": round(line["stall_micros"] / 1e6, 2),
        "max_l0_files": line["max_l0_files"], "max_l0_sublevels": line["max_l0_sublevels"],
        "write_amp": round(line["write_amp"], 2), "edits": len(data["edits"]),
        "l0_compactions": len(l0c),
        "l0_compactions_with_wide_file": sum(1 for c in l0c if c[2]),
        "largest_l0_compaction_mb": round(biggest[3] / 1e6, 1) if biggest else 0,
        "screenshot_step": step, "png": str(png), "png_kb": png.stat().st_size // 1024,
        "page": str(page), "console_errors": errors,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3_000_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "spiral"))
    ap.add_argument("--img", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--bin", default=str(ROOT / "target" / "release"))
    ap.add_argument("--width", type=int, default=1100)
    ap.add_argument("--height", type=int, default=760)
    ap.add_argument("--modes", default="off,on")
    args = ap.parse_args()
    Path(args.img).mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    results = [run(m, args, Path(args.bin), out) for m in args.modes.split(",")]
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
