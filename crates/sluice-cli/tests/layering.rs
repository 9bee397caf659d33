//! The CLI's rooms form layers (ARCHITECTURE.md, "The CLI"): a module may use only modules of
//! the layers below it, and the command rooms of the top layer stand alone, none using
//! another; `lib.rs`, the dispatcher (which `main.rs` only calls), sits above them all. This
//! test reads every `crate::<module>` path in `src/` and fails on an arrow that runs up or
//! sideways, on a room missing from the list, and on a source file grown past what a newcomer
//! reads in one sitting.
//! The engine's own test is `crates/sluice/tests/layering.rs`.

use std::path::{Path, PathBuf};

/// Bottom to top. The modules of one layer do not use each other.
const LAYERS: &[&[&str]] = &[
    // Bytes as text, hex and JSON: no other room.
    &["text"],
    // The flags every command shares (--db, --hex, ...) and the result type.
    &["args"],
    // Checking and opening a Db directory.
    &["db_dir"],
    // The commands, by what they do.
    &["kv_cmd", "ops_cmd", "inspect", "sst_cmd", "import_cmd"],
];

/// The dispatcher (`lib.rs`, which `main.rs` only calls): above every layer, so it may use
/// them all.
const TOP: &[&str] = &["lib", "main"];

/// Longest CLI source file, in lines (unit tests included).
const MAX_LINES: usize = 800;

/// Every `.rs` file under `src/`, with the module it belongs to (its first path component
/// below `src/`, without `.rs`), in a stable order.
fn sources() -> Vec<(String, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![src.clone()];
    let mut found = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let first = path.strip_prefix(&src).unwrap().iter().next().unwrap();
                let module = Path::new(first).file_stem().unwrap().to_str().unwrap();
                found.push((module.to_string(), path));
            }
        }
    }
    found.sort();
    found
}

/// `path` as `src/...`, for messages.
fn shown(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// `(line number, module)` for each `crate::<module>` path in `text`. A grouped path
/// (`crate::{a, b}`) yields the module `{`, so that it is refused rather than unseen.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices("crate::") {
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `other_crate::`, `$crate::`
            }
            let rest = &line[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let name = if name.is_empty() {
                rest.chars().take(1).collect()
            } else {
                name
            };
            out.push((n + 1, name));
        }
    }
    out
}

#[test]
fn rooms_use_only_the_layers_below_them() {
    let mut wrong = Vec::new();
    for (module, path) in sources() {
        if TOP.contains(&module.as_str()) {
            continue;
        }
        let Some(from) = layer_of(&module) else {
            continue; // reported by every_room_is_in_a_layer
        };
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, to) in crate_paths(&text) {
            let at = format!("{}:{line}", shown(&path));
            if to == "{" {
                wrong.push(format!(
                    "{at}: a grouped crate::{{…}} path: write one `crate::<module>` path each"
                ));
            } else if to == module {
                // within its own room
            } else if TOP.contains(&to.as_str()) {
                wrong.push(format!("{at}: {module} uses the dispatcher"));
            } else {
                match layer_of(&to) {
                    Some(l) if l > from => {
                        wrong.push(format!("{at}: {module} uses {to}, above it"))
                    }
                    Some(l) if l == from => {
                        wrong.push(format!("{at}: {module} uses {to}, beside it in its layer"))
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows that run up or sideways (move what both need to a layer below):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_room_is_in_a_layer() {
    let modules: Vec<String> = sources().into_iter().map(|(m, _)| m).collect();
    for m in &modules {
        assert!(
            TOP.contains(&m.as_str()) || layer_of(m).is_some(),
            "src/{m} is in no layer of LAYERS"
        );
    }
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            modules.iter().any(|x| x == m),
            "LAYERS names {m}, which src/ does not have"
        );
    }
}

#[test]
fn no_cli_file_is_too_long_to_read() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter_map(|(_, path)| {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", shown(&path)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by what they do): {long:?}"
    );
}
