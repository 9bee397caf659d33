//! The engine's folders form layers (ARCHITECTURE.md): a folder may use only folders drawn
//! below it. This test reads every `crate::<folder>` path in `src/` and fails on an arrow that
//! runs back up, on a source file grown past the size a newcomer can read in one sitting, and
//! on test code outside the one place tests in `src/` go.

use std::path::Path;

/// Bottom to top.
const LAYERS: &[&str] = &[
    "base",
    "fs",
    "wal",
    "memtable",
    "sst",
    "version",
    "read",
    "compaction",
    "db",
];

/// Longest engine source file, in lines (tests excluded).
const MAX_LINES: usize = 800;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file of tests of their own (`<subject>_tests.rs`).
fn is_tests_file(f: &Path) -> bool {
    f.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with("_tests.rs"))
}

fn rank(folder: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == folder)
}

#[test]
fn no_folder_uses_a_folder_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut back_edges = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let Some(from) = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .and_then(rank)
        else {
            continue; // lib.rs: the public face, above everything
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if let Some(to) = rank(&name) {
                    if to > from {
                        back_edges.push(format!(
                            "{}:{}: {} uses {}",
                            rel.display(),
                            i + 1,
                            LAYERS[from],
                            name
                        ));
                    }
                }
            }
        }
    }
    assert!(
        back_edges.is_empty(),
        "arrows that run back up:\n{}",
        back_edges.join("\n")
    );
}

#[test]
fn the_layer_list_names_every_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            assert!(rank(&name).is_some(), "folder {name} is in no layer");
        }
    }
}

#[test]
fn no_engine_file_is_too_long_to_read() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter(|f| !is_tests_file(f))
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:?}");
}

/// Test code in `src/` has one of two homes: a file's own unit tests sit at its bottom in
/// `#[cfg(test)] mod tests`; tests of a folder, golden-file tests and tests too long to sit
/// beside their code get a file of their own, `<subject>_tests.rs`, declared
/// `#[cfg(test)] mod <subject>_tests;` in the folder's `mod.rs`.
#[test]
fn tests_in_src_sit_in_mod_tests_or_a_tests_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let stray: Vec<String> = files
        .iter()
        .filter(|f| !is_tests_file(f))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let first_test = text.find("#[test]");
            let module = text.find("#[cfg(test)]\nmod tests {");
            first_test.is_some_and(|t| module.is_none_or(|m| t < m))
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert!(
        stray.is_empty(),
        "tests outside `mod tests` in a file not named `*_tests.rs`: {stray:?}"
    );
}
