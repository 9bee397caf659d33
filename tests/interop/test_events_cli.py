"""`--events FILE`: the write commands and `sluice import` append the Db's events as JSON lines."""
import json

from conftest import ROOT

PENGUINS = ROOT / "examples" / "penguins.csv"
SCHEMA = ROOT / "examples" / "penguins.sql"


def read_events(path):
    lines = path.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # every line one JSON object
    assert all(isinstance(e["event"], str) and e["time_us"] > 0 for e in events)
    return events


def test_import_events_name_the_ingested_tables(sluice, tmp):
    db, out = tmp / "db", tmp / "events.jsonl"
    summary = json.loads(sluice("import", "--db", db, "--schema", SCHEMA, "--header", "--null", "NA",
                                "--json", "--events", out, PENGUINS).stdout)
    events = read_events(out)
    ingests = [e for e in events if e["event"] == "ingest"]
    assert len(ingests) == 1, events
    ingest = ingests[0]
    assert not ingest["flushable"] and not ingest["write_batch"]
    tables = [f["table"] for f in ingest["files"]]
    # The import's summary and the event agree on the files: their count and levels.
    assert sorted(t["level"] for t in tables) == sorted(f["level"] for f in summary["files"])
    # Each ingested table was linked in (one table_file_created) before the ingest.
    created = {e["number"]: i for i, e in enumerate(events) if e["event"] == "table_file_created"}
    at = events.index(ingest)
    for t in tables:
        assert created[t["number"]] < at
        assert t["size"] > 0 and t["smallest_key"] <= t["largest_key"]


def test_write_commands_append_their_events(sluice, tmp):
    db, out = tmp / "db", tmp / "events.jsonl"
    sluice("put", "--db", db, "--events", out, "a", "1")
    sluice("--events", out, "flush", "--db", db)  # global flag, before the command too
    sst = tmp / "b.sst"
    sluice("sst", "build", "--out", sst, "--text", input=b"b\t2\n")
    sluice("ingest", "--db", db, "--events", out, sst)
    sluice("compact", "--db", db, "--events", out)
    names = [e["event"] for e in read_events(out)]
    assert names.count("flush_end") == 1 and names.count("ingest") == 1, names
    assert names.index("flush_begin") < names.index("flush_end") < names.index("ingest")
    compaction = [e for e in read_events(out) if e["event"] == "compaction_end"]
    assert compaction and compaction[-1]["kind"] == "manual" and compaction[-1]["error"] is None
    # Read commands take the flag and report nothing (they write nothing).
    before = out.read_text()
    sluice("get", "--db", db, "--events", out, "a")
    assert out.read_text() == before


def test_an_unwritable_events_file_fails_before_the_db_is_touched(sluice, tmp):
    db = tmp / "db"
    r = sluice("put", "--db", db, "--events", tmp / "no" / "such" / "dir.jsonl", "a", "1", check=False)
    assert r.returncode == 2 and b"--events" in r.stderr
    assert not db.exists()
