//! `sluice lsm --html OUT.html`: one self-contained page — the JSON of `--json`, the script
//! (`page.js`, hand-written: canvas, no library) and the style (`page.css`) inline in
//! `page.html`; it loads nothing from the network.
//!
//! The page embeds the edit list, not a version per step: it replays the edits itself and
//! keeps a checkpoint of the levels every 512 edits, so a slider jump replays at most 512
//! edits and a 100,000-edit history stays a few tens of MB of JSON. The series are plotted
//! once (one min-max segment per pixel column); a step redraws the levels and the cursors.

use std::io::Write;
use std::path::Path;

use super::{write_json, Loaded};

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// Writes the page for `l` to `path` (written whole, then renamed into place).
pub fn write_page(l: &Loaded, path: &Path) -> Result<(), sluice::Error> {
    let mut json = Vec::new();
    write_json(&l.timeline, &l.key_names, &l.key_decoding, &mut json)
        .map_err(|e| sluice::Error::io(path, e))?;
    let page = render(&json);
    let tmp = path.with_extension("html.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(page.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        sluice::Error::io(path, e)
    })
}

/// The page around `json`. `<` inside the JSON (only in strings: keys) becomes `\u003c`, so
/// no key can end the script element or open a comment in it.
fn render(json: &[u8]) -> String {
    let data = String::from_utf8_lossy(json).replace('<', "\\u003c");
    let (head, rest) = PAGE.split_once("/*STYLE*/").unwrap_or((PAGE, ""));
    let (mid, rest) = rest.split_once("/*DATA*/").unwrap_or((rest, ""));
    let (mid2, tail) = rest.split_once("/*SCRIPT*/").unwrap_or((rest, ""));
    let mut s = String::with_capacity(PAGE.len() + SCRIPT.len() + STYLE.len() + data.len());
    for part in [head, STYLE, mid, &data, mid2, SCRIPT, tail] {
        s.push_str(part);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_cannot_close_the_script_element() {
        let page = render(br#"{"keys": ["</script><b>"]}"#);
        assert!(!page.contains("</script><b>"));
        assert!(page.contains(r#"\u003c/script>"#));
        assert_eq!(page.matches("</script>").count(), 2);
    }
}
