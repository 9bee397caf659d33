"""`sluice lsm --html` in a real headless browser (Debian chromium, driven over CDP by cdp.py):
the page loads with no console error, moving the slider (and the arrow keys) changes the
drawing, the known key-wide file is flagged, a screenshot lands in the test output directory
(target/test-output or $SLUICE_TEST_OUTPUT).

`test_measure_a_long_history` times the page on a synthetic MANIFEST (written by the Rust test
`a_long_synthetic_manifest_replays`): 3,000 edits by default, SLUICE_LSM_SYNTH_EDITS=100000
for the issue's figure; the numbers go to lsm_measure.json in the output directory."""
import json
import os
import subprocess

import pytest

from cdp import Browser, chromium_path, output_dir
from conftest import ROOT

pytestmark = pytest.mark.skipif(chromium_path() is None,
                                reason="no chromium: run scripts/setup.sh")


def build_db(sluice, db, tmp):
    """Overlapping flushes into L0, then one tiny file spanning every key (the wide one)."""
    for lo, hi in [(0, 400), (100, 300), (200, 260), (500, 900)]:
        lines = "".join(f"k{k:04d}\t{'v' * 200}\n" for k in range(lo, hi)).encode()
        sluice("load", "--db", db, input=lines)
        sluice("flush", "--db", db)
    sluice("sst", "build", "--out", tmp / "wide.sst", input=b"6130\t78\n7a7a\t78\n")
    sluice("ingest", "--db", db, "--allow-overlap", tmp / "wide.sst")
    sluice("compact", "--db", db, "--start", "k0100", "--end", "k0300")


@pytest.fixture
def browser():
    b = Browser()
    yield b
    b.close()


def test_page_loads_steps_and_flags_the_wide_file(sluice, tmp, browser):
    db = tmp / "db"
    build_db(sluice, db, tmp)
    page = tmp / "lsm.html"
    sluice("lsm", "--db", db, "--html", page)
    data = json.loads(sluice("lsm", "--db", db, "--json").stdout)
    wide = [f for f in data["files"] if f.get("wide")]
    assert len(wide) == 1
    wide_edit, wide_number = wide[0]["edit"], wide[0]["number"]

    browser.open(page.as_uri())
    assert browser.eval("typeof window.lsm") == "object"
    edits = browser.eval("lsm.edits")
    assert edits == len(data["edits"])
    assert browser.eval("lsm.step()") == edits - 1

    # The slider, as a user drags it: its value and an input event (drawn on the next frame).
    last = browser.eval("lsm.signature()")
    browser.eval(f"(() => {{ const s = document.getElementById('slider'); s.value = {wide_edit};"
                 " s.dispatchEvent(new Event('input')); })()")
    browser.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
                 await_promise=True)
    assert browser.eval("lsm.step()") == wide_edit
    at_wide = browser.eval("lsm.signature()")
    assert at_wide != last, "moving the slider changes the drawing"
    assert wide_number in browser.eval("lsm.wideShown()"), "the wide file is drawn flagged"
    browser.screenshot(output_dir() / "lsm_timeline.png")

    # Keys step one edit.
    browser.key("ArrowLeft")
    assert browser.eval("lsm.step()") == wide_edit - 1
    assert browser.eval("lsm.signature()") != at_wide
    browser.key("ArrowRight")
    assert browser.eval("lsm.signature()") == at_wide
    assert browser.errors == [], browser.errors
    png = output_dir() / "lsm_timeline.png"
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_measure_a_long_history(sluice, tmp, browser):
    """Load and step times of the page of a synthetic history: 3,000 edits by default (in CI),
    SLUICE_LSM_SYNTH_EDITS=100000 for the issue's figure; results in lsm_measure.json."""
    n = int(os.environ.get("SLUICE_LSM_SYNTH_EDITS", "3000"))
    synth = tmp / "synth"
    # `--workspace`, not `-p sluice-cli`: the workspace's features, as `cargo test --workspace`
    # built them, so CI reuses that build (with `-p`, cargo resolved other features and rebuilt
    # the crates under sluice-cli: 4-5 minutes of a CI run).
    subprocess.run(["cargo", "test", "-q", "--workspace", "--test", "lsm_timeline", "--",
                    "a_long_synthetic_manifest_replays"], cwd=ROOT, check=True,
                   env={**os.environ, "SLUICE_LSM_SYNTH_DIR": str(synth),
                        "SLUICE_LSM_SYNTH_EDITS": str(n)})
    page = tmp / "synth.html"
    sluice("lsm", "--db", synth, "--html", page)
    load_s = browser.open(page.as_uri())
    assert browser.eval("lsm.edits") == n
    ready_ms = browser.eval("lsm.readyMs")
    step = browser.eval("""(() => {
        const out = {}; const t = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
        const mid = Math.floor(lsm.edits / 2) - 200; lsm.goTo(mid);
        let s = 0; for (let i = 1; i <= 200; i++) s += t(() => lsm.goTo(mid + i)); out.forward_ms = s / 200;
        s = 0; for (let i = 1; i <= 200; i++) s += t(() => lsm.goTo(mid + 200 - i)); out.backward_ms = s / 200;
        let x = 12345; s = 0; let worst = 0;
        for (let i = 0; i < 200; i++) { x = (x * 1103515245 + 12345) % 2147483648;
          const d = t(() => lsm.goTo(x % lsm.edits)); s += d; worst = Math.max(worst, d); }
        out.jump_ms = s / 200; out.jump_worst_ms = worst; return out; })()""")
    # A step as the user sees it: key press to the next painted frame.
    frames = browser.eval("""(async () => {
        const f = () => new Promise(r => requestAnimationFrame(() => r()));
        await f(); const t0 = performance.now();
        for (let i = 0; i < 60; i++) { lsm.goTo(lsm.step() + 1); await f(); }
        return (performance.now() - t0) / 60; })()""", await_promise=True)
    browser.screenshot(output_dir() / "lsm_timeline_100k.png")
    result = {"edits": n, "html_bytes": page.stat().st_size, "load_s": round(load_s, 3),
              "script_ready_ms": round(ready_ms, 1), **{k: round(v, 3) for k, v in step.items()},
              "step_to_frame_ms": round(frames, 2)}
    (output_dir() / "lsm_measure.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    assert browser.errors == [], browser.errors
