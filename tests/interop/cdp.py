"""A small Chrome DevTools Protocol driver for headless Debian `chromium` (no npm, no
Playwright): start the browser, open a page, evaluate JavaScript, press keys, collect console
errors and take screenshots. Used by test_lsm_html.py."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket  # websocket-client

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1000", "--remote-debugging-port=0", "--remote-allow-origins=*",
]


def chromium_path():
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless chromium with one page; `errors` collects console errors and exceptions."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="sluice-chromium-")
        self.proc = subprocess.Popen(
            [chromium_path(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.time() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start (no DevToolsActivePort)")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        targets = []
        while not targets:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
                targets = [t for t in json.loads(r.read()) if t.get("type") == "page"]
            if not targets:
                time.sleep(0.05)
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=120)
        self.next_id = 0
        self.errors = []
        self.events = []
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")

    def _record(self, msg):
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            self.errors.append(p["exceptionDetails"].get("exception", {}).get("description")
                               or p["exceptionDetails"].get("text"))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append(p["entry"].get("text"))
        if m:
            self.events.append(m)

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._record(msg)

    def wait_event(self, name, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if name in self.events:
                self.events.remove(name)
                return
            self._record(json.loads(self.ws.recv()))
        raise TimeoutError(name)

    def open(self, url):
        """Navigates and waits for the load event; returns the wall-clock seconds it took."""
        self.events.clear()
        t0 = time.perf_counter()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        return time.perf_counter() - t0

    def eval(self, expr, await_promise=False):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def key(self, key, code=None):
        vk = {"ArrowRight": 39, "ArrowLeft": 37, "Home": 36, "End": 35}.get(key, 0)
        for t in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=t, key=key, code=code or key,
                      windowsVirtualKeyCode=vk)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


def output_dir():
    """Where tests leave screenshots and measurements: $SLUICE_TEST_OUTPUT or target/test-output."""
    root = Path(__file__).resolve().parents[2]
    d = Path(os.environ.get("SLUICE_TEST_OUTPUT", root / "target" / "test-output"))
    d.mkdir(parents=True, exist_ok=True)
    return d
