"""bench/run's own logic that a fresh machine depends on."""

from importlib.machinery import SourceFileLoader
from pathlib import Path

BENCH = Path(__file__).resolve().parent
run = SourceFileLoader("bench_run", str(BENCH / "run")).load_module()


def test_libclang_cpp_alone_is_not_the_libclang_bindgen_loads(tmp_path):
    # Debian's llvm package ships libclang-cpp.so.N without libclang-dev: bindgen cannot use
    # it, so the harness must install libclang-dev rather than skip the install.
    (tmp_path / "libclang-cpp.so.14").write_bytes(b"")
    assert run.find_libclang([str(tmp_path)]) is None
    (tmp_path / "libclang-14.so.1").write_bytes(b"")
    assert run.find_libclang([str(tmp_path)]).endswith("libclang-14.so.1")


def test_plain_libclang_so_is_found(tmp_path):
    (tmp_path / "libclang.so.1").write_bytes(b"")
    assert run.find_libclang([str(tmp_path)]).endswith("libclang.so.1")
