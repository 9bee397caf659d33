//! The layering checker of `tests/layering.rs`, shared by the engine and the stress harness
//! (`crates/sluice-stress/tests/layering.rs` includes this file with `#[path]`).
//!
//! The modules of a crate (each folder or file under `src/`; `lib.rs` and `main.rs` are its
//! face, above them all) form layers, bottom to top. A module may use only itself and the
//! modules drawn below it: every `crate::<module>` path (also `crate::{a, b}`) in a module's
//! files is checked, comments included. No source file grows past the size a newcomer can
//! read in one sitting (tests excluded), and test code in `src/` sits in one of two places: a
//! file's own `#[cfg(test)] mod tests` at its bottom, or a file of its own named
//! `<subject>_tests.rs`.

use std::path::{Path, PathBuf};

/// A crate's layers and limits.
pub struct Layering {
    /// The crate's `src/`.
    pub src: PathBuf,
    /// Modules, bottom to top.
    pub layers: &'static [&'static str],
    /// Longest source file, in lines (`*_tests.rs` files excluded).
    pub max_lines: usize,
}

impl Layering {
    /// The layering of the crate whose manifest directory is `dir`.
    pub fn of(dir: &str, layers: &'static [&'static str], max_lines: usize) -> Self {
        Layering {
            src: Path::new(dir).join("src"),
            layers,
            max_lines,
        }
    }

    /// Every arrow that runs back up: `file:line: module uses module-above`.
    pub fn back_edges(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.files() {
            let rel = f.strip_prefix(&self.src).unwrap();
            let Some(from) = module_of(rel).and_then(|m| self.rank(&m)) else {
                continue; // lib.rs, main.rs: the public face, above everything
            };
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                for name in crate_paths(line) {
                    if self.rank(&name).is_some_and(|to| to > from) {
                        out.push(format!(
                            "{}:{}: {} uses {name}",
                            rel.display(),
                            i + 1,
                            self.layers[from]
                        ));
                    }
                }
            }
        }
        out
    }

    /// Modules (folders and files under `src/`) that are in no layer.
    pub fn unlayered(&self) -> Vec<String> {
        std::fs::read_dir(&self.src)
            .unwrap()
            .filter_map(|e| module_of(Path::new(&e.unwrap().file_name())))
            .filter(|m| self.rank(m).is_none())
            .collect()
    }

    /// Source files over `max_lines` (`*_tests.rs` files excluded), with their length.
    pub fn too_long(&self) -> Vec<String> {
        self.files()
            .iter()
            .filter(|f| !is_tests_file(f))
            .filter_map(|f| {
                let n = std::fs::read_to_string(f).unwrap().lines().count();
                (n > self.max_lines).then(|| format!("{}: {n} lines", f.display()))
            })
            .collect()
    }

    /// Files with tests outside `mod tests` that are not named `*_tests.rs`.
    pub fn stray_tests(&self) -> Vec<String> {
        self.files()
            .iter()
            .filter(|f| !is_tests_file(f))
            .filter(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let first_test = text.find("#[test]");
                let module = text.find("#[cfg(test)]\nmod tests {");
                first_test.is_some_and(|t| module.is_none_or(|m| t < m))
            })
            .map(|f| f.strip_prefix(&self.src).unwrap().display().to_string())
            .collect()
    }

    /// Fails on any arrow that runs back up.
    pub fn assert_no_back_edges(&self) {
        let back_edges = self.back_edges();
        assert!(
            back_edges.is_empty(),
            "arrows that run back up:\n{}",
            back_edges.join("\n")
        );
    }

    /// Fails on a module in no layer.
    pub fn assert_every_module_layered(&self) {
        let unlayered = self.unlayered();
        assert!(unlayered.is_empty(), "in no layer: {unlayered:?}");
    }

    /// Fails on a source file over `max_lines`.
    pub fn assert_no_file_too_long(&self) {
        let long = self.too_long();
        let max = self.max_lines;
        assert!(long.is_empty(), "files over {max} lines: {long:?}");
    }

    /// Fails on test code outside `mod tests` and `*_tests.rs` files.
    pub fn assert_no_stray_tests(&self) {
        let stray = self.stray_tests();
        assert!(
            stray.is_empty(),
            "tests outside `mod tests` in a file not named `*_tests.rs`: {stray:?}"
        );
    }

    fn rank(&self, module: &str) -> Option<usize> {
        self.layers.iter().position(|l| *l == module)
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        rust_files(&self.src, &mut out);
        out
    }
}

/// The module a path under `src/` belongs to: its first component, `.rs` (or a top-level
/// `_tests.rs`) stripped; `None` for `lib.rs` and `main.rs`.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    // A top-level `x_tests.rs` is module `x`'s tests (`#[path]`), not a module of its own.
    let name = first
        .strip_suffix("_tests.rs")
        .filter(|_| rel.components().count() == 1)
        .unwrap_or(name);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The modules named by the `crate::` paths of a line: `crate::a::x` gives `a`,
/// `crate::{a::x, b}` gives `a` and `b`.
fn crate_paths(line: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            out.push(ident(&group[start..i]));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            out.push(ident(&group[start..i]));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            }
            None => out.push(ident(rest)),
        }
    }
    out
}

/// A file of tests of their own (`<subject>_tests.rs`).
fn is_tests_file(f: &Path) -> bool {
    f.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with("_tests.rs"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layering tests of a crate, from an expression giving its [`Layering`].
macro_rules! layering_tests {
    ($layering:expr) => {
        #[test]
        fn no_module_uses_a_module_above_it() {
            $layering.assert_no_back_edges();
        }

        #[test]
        fn the_layer_list_names_every_module() {
            $layering.assert_every_module_layered();
        }

        #[test]
        fn no_source_file_is_too_long_to_read() {
            $layering.assert_no_file_too_long();
        }

        /// Test code in `src/` has one of two homes: a file's own unit tests sit at its bottom
        /// in `#[cfg(test)] mod tests`; tests of a folder, golden-file tests and tests too long
        /// to sit beside their code get a file of their own, `<subject>_tests.rs`, declared
        /// `#[cfg(test)] mod <subject>_tests;` in the folder's `mod.rs`.
        #[test]
        fn tests_in_src_sit_in_mod_tests_or_a_tests_file() {
            $layering.assert_no_stray_tests();
        }
    };
}

pub(crate) use layering_tests;
