"""import-online's report logic (bench/import/online.py): percentiles, ratios, the goal line,
saturation and check problems, on hand-made result lines (no engine runs, no timing)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "import"))

import online  # noqa: E402


def kind(p99, p9999, ops_per_s=4000.0, target=4000):
    return {"ops": 40_000, "ops_per_s": ops_per_s, "target_ops_per_s": target,
            "latency_us": {"p50": 50.0, "p99": p99, "p999": p99 * 2, "p9999": p9999, "max": p9999 * 2}}


def run(engine, base_p99, during_p99, rnd=0, rows=200_000, **check):
    c = {"rows": rows, "sum": 7, "acked_writes": 10, "acked_writes_missing": 0, "read_misses": 0}
    c.update(check)
    return {"workload": "import-online", "engine": engine, "round": rnd, "rows_expected": 200_000,
            "baseline": {"writes": kind(base_p99, 1000.0), "reads": kind(base_p99, 1000.0)},
            "during": {"writes": kind(during_p99, 3000.0), "reads": kind(during_p99, 3000.0)},
            "import": {"seconds": 2.5, "rows": rows}, "check": c}


def test_summary_uses_the_rust_rule():
    s = online.summary(list(range(1000, 101_000, 1000)))  # 100 samples, 1..100 µs
    assert s == {"p50": 51.0, "p99": 100.0, "p999": 100.0, "p9999": 100.0, "max": 100.0}
    assert online.summary([]) is None


def test_ratios_are_of_the_medians():
    rs = [run("sluice", 100.0, 110.0, 0), run("sluice", 200.0, 300.0, 1), run("sluice", 300.0, 330.0, 2)]
    b, d, x = online.ratios(rs, "writes")["p99"]
    assert (b, d) == (200.0, 300.0) and x == 1.5
    assert online.ratios(rs, "reads")["p9999"] == (1000.0, 3000.0, 3.0)


def test_goal_met_and_missed():
    assert "**met**" in online.goal_line([run("sluice", 100.0, 120.0)])
    assert "**missed**" in online.goal_line([run("sluice", 100.0, 121.0)])
    r = run("sluice", 100.0, 110.0)
    r["during"]["reads"]["latency_us"] = None
    assert "not checked" in online.goal_line([r])


def test_report_section_has_both_engines_the_goal_and_the_floor():
    d = run("duckdb", 1000.0, 1500.0)
    d["overhead"] = {"empty_call_us": {"p50": 0.1, "p99": 0.2},
                     "paced_noop_us": {"p50": 60.0, "p99": 900.0, "p9999": 5000.0}}
    d["during"]["writes"]["ops_per_s"] = 500.0
    text = "\n".join(online.report_lines([run("sluice", 100.0, 110.0), d,
                                          {"workload": "import-online", "engine": "duckdb",
                                           "round": 1, "error": "boom"}], ["sluice", "duckdb"]))
    assert "| sluice | writes | 1 |" in text and "| duckdb | reads | 1 |" in text
    assert "100 → 110 | 1.10 |" in text
    assert "**met**" in text
    assert "duckdb saturated" in text and "writes during 500 of 4,000 ops/s" in text
    assert "sluice saturated" not in text
    assert "duckdb p50 60.0 / p99 900 / p99.99 5,000 µs" in text
    assert "timed empty Python call: p50 0.1 / p99 0.2 µs" in text


def test_check_problems():
    assert online.check_problems(run("sluice", 1.0, 1.0)) == []
    bad = run("sluice", 1.0, 1.0, rows=5, acked_writes_missing=2)
    assert online.check_problems(bad) == ["rows 5 != 200000", "acked_writes_missing = 2"]
    r = run("duckdb", 1.0, 1.0)
    assert "check failed" in "\n".join(online.report_lines([r, bad], ["sluice", "duckdb"]))


def test_order_values_match_the_sql_preload_formula():
    # ORDER_VALUE_SQL: substr(repeat(md5(i), 4), 1, 100); md5 hex is 32 characters.
    v = online.order_value(online.order_id(0, 7))
    assert len(v) == 100 and v[:32] == v[32:64]
    assert online.order_id(2, 5) == (2 << 40) + 5
