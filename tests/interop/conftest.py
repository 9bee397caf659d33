"""Shared fixtures: the `sluice` binary built by scripts/test.sh (or cargo) and data helpers."""
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _find_sluice() -> Path:
    explicit = os.environ.get("SLUICE_BIN")
    if explicit:
        return Path(explicit)
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "sluice"
        if p.exists():
            return p
    subprocess.run(["cargo", "build", "-q", "-p", "sluice-cli"], cwd=ROOT, check=True)
    return ROOT / "target" / "debug" / "sluice"


@pytest.fixture(scope="session")
def sluice_bin() -> Path:
    """The path of the `sluice` binary (for tests that start, signal or kill it themselves)."""
    return _find_sluice()


@pytest.fixture(scope="session")
def sluice(sluice_bin):
    binary = sluice_bin

    def run(*args, input=None, check=True):
        r = subprocess.run([str(binary), *map(str, args)], input=input, capture_output=True)
        if check and r.returncode != 0:
            raise AssertionError(f"sluice {' '.join(map(str, args))} failed: {r.stderr.decode()}")
        return r

    return run


def random_pairs(seed: int, n: int, max_key: int = 300):
    """Sorted unique (key, value) pairs whose key lengths cover every XXPH3 length range."""
    rng = random.Random(seed)
    keys = set()
    lengths = list(range(1, 20)) + [31, 32, 33, 64, 65, 96, 97, 127, 128, 129, 200, 240, 241, 255, 256, 257, 1023, 1024, 1025, 2049]
    for ln in lengths:
        for _ in range(3):
            keys.add(rng.randbytes(ln))
    while len(keys) < n:
        keys.add(rng.randbytes(rng.randint(1, max_key)))
    return [(k, rng.randbytes(rng.randint(0, 400))) for k in sorted(keys)]


def to_lines(pairs) -> bytes:
    return b"".join(k.hex().encode() + b"\t" + v.hex().encode() + b"\n" for k, v in pairs)


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)
