//! Compiles `shim/sst_reader.cc` (RocksDB's `SstFileReader`, absent from the C API the `rocksdb`
//! crate binds) against the headers of the bundled `librocksdb-sys` source; the symbols it uses
//! come from the static library that crate links.

use std::path::PathBuf;

fn rocksdb_include() -> PathBuf {
    if let Ok(dir) = std::env::var("ROCKSDB_INCLUDE_DIR") {
        return PathBuf::from(dir);
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo"));
    let registry = cargo_home.join("registry").join("src");
    for index in std::fs::read_dir(&registry)
        .expect("cargo registry sources")
        .flatten()
    {
        for krate in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = krate.file_name().to_string_lossy().into_owned();
            if name.starts_with("librocksdb-sys-0.19.0") {
                return krate.path().join("rocksdb").join("include");
            }
        }
    }
    panic!("librocksdb-sys 0.19.0 sources not found under {registry:?}; set ROCKSDB_INCLUDE_DIR");
}

fn main() {
    println!("cargo:rerun-if-changed=shim/sst_reader.cc");
    println!("cargo:rerun-if-env-changed=ROCKSDB_INCLUDE_DIR");
    cc::Build::new()
        .cpp(true)
        .file("shim/sst_reader.cc")
        .include(rocksdb_include())
        .flag("-std=c++20")
        .opt_level(2)
        .warnings(false)
        .compile("anchor_sst_reader");
}
