import pathlib

import pytest

import sluice

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture
def db(tmp_path):
    with sluice.open(tmp_path / "db") as d:
        yield d
