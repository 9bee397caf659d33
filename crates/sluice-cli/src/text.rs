//! How keys and values cross the command line and the output, exactly.
//!
//! * **Text** (the default): UTF-8 is printed as is; a backslash prints as `\\`, tab, newline
//!   and carriage return as `\t`, `\n`, `\r`, and every other control byte and every byte that
//!   is not part of valid UTF-8 as `\xNN`. [`unescape`] reverses [`escape`] exactly, so
//!   `sst dump --text | sst build --text` and `scan | load` round-trip any key.
//! * **Hex**: lowercase hex, on input optionally prefixed by `0x`.
//! * **JSON**: a key or value that is valid UTF-8 is a JSON string under `key`/`value`; any
//!   other is hex under `key_hex`/`value_hex` (always so with `--hex`).

use std::fmt::Write as _;

/// Escapes `b` reversibly (see the module doc).
pub fn escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => out.push(c),
            }
        }
        for &x in chunk.invalid() {
            let _ = write!(out, "\\x{x:02x}");
        }
    }
    out
}

/// Reverses [`escape`]; any other backslash sequence is an error.
pub fn unescape(s: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match s.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'x') => {
                let hex = s
                    .get(i + 2..i + 4)
                    .ok_or("`\\x` needs two hex digits after it")?;
                let mut byte = [0u8];
                hex::decode_to_slice(hex, &mut byte)
                    .map_err(|_| "`\\x` needs two hex digits after it".to_string())?;
                out.push(byte[0]);
                i += 4;
                continue;
            }
            Some(&c) => {
                return Err(format!(
                    "unknown escape `\\{}` (use \\\\ for a backslash)",
                    char::from(c).escape_default()
                ))
            }
            None => return Err("a lone `\\` at the end (use \\\\ for a backslash)".into()),
        }
        i += 2;
    }
    Ok(out)
}

/// Decodes hex, with or without a `0x` prefix.
pub fn decode_hex(s: &[u8]) -> Result<Vec<u8>, String> {
    let digits = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    hex::decode(digits).map_err(|e| format!("not valid hex: {e}"))
}

/// How one kind of field (keys or values) is written on the command line and printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    /// Text: command-line arguments as given, output escaped (see [`escape`]).
    Text,
    /// Hex (`0x` prefix optional on input).
    Hex,
}

impl Enc {
    /// Hex if `hex`, else text.
    pub fn hex_if(hex: bool) -> Enc {
        if hex {
            Enc::Hex
        } else {
            Enc::Text
        }
    }

    /// A command-line argument's bytes: text as given, hex decoded.
    pub fn arg(self, s: &str, what: &str) -> Result<Vec<u8>, String> {
        match self {
            Enc::Text => Ok(s.as_bytes().to_vec()),
            Enc::Hex => decode_hex(s.as_bytes()).map_err(|e| format!("{what} {s:?} is {e}")),
        }
    }

    /// A field of an input line: text unescaped, hex decoded.
    pub fn field(self, s: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Enc::Text => unescape(s),
            Enc::Hex => decode_hex(s),
        }
    }

    /// Printed form: text escaped, or hex.
    pub fn show(self, b: &[u8]) -> String {
        match self {
            Enc::Text => escape(b),
            Enc::Hex => hex::encode(b),
        }
    }
}

/// Puts `b` into a JSON object as `name` (a UTF-8 string) or `name_hex` (see the module doc).
pub fn json_field(
    m: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
    b: &[u8],
    force_hex: bool,
) {
    match std::str::from_utf8(b) {
        Ok(s) if !force_hex => {
            m.insert(name.into(), s.into());
        }
        _ => {
            m.insert(format!("{name}_hex"), hex::encode(b).into());
        }
    }
}

/// Reads `name` (a string) or `name_hex` (hex) from a JSON object.
pub fn json_bytes(
    m: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Result<Option<Vec<u8>>, String> {
    let hex_name = format!("{name}_hex");
    match (m.get(name), m.get(&hex_name)) {
        (Some(_), Some(_)) => Err(format!("both \"{name}\" and \"{hex_name}\" are given")),
        (Some(serde_json::Value::String(s)), None) => Ok(Some(s.as_bytes().to_vec())),
        (Some(_), None) => Err(format!("\"{name}\" must be a string")),
        (None, Some(serde_json::Value::String(s))) => decode_hex(s.as_bytes())
            .map(Some)
            .map_err(|e| format!("\"{hex_name}\" is {e}")),
        (None, Some(_)) => Err(format!("\"{hex_name}\" must be a string")),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_is_reversible_and_keeps_utf8() {
        assert_eq!(escape("café".as_bytes()), "café");
        assert_eq!(
            escape(b"a\tb\nc\\d\r\x00\x7f\"'"),
            "a\\tb\\nc\\\\d\\r\\x00\\x7f\"'"
        );
        assert_eq!(escape(b"\xff\xc3"), "\\xff\\xc3");
        let mut all: Vec<u8> = (0..=255u8).collect();
        all.extend_from_slice("naïve ☃ \u{10ffff}".as_bytes());
        all.extend_from_slice(b"\\x41\\\\");
        assert_eq!(unescape(escape(&all).as_bytes()).unwrap(), all);
    }

    #[test]
    fn unescape_rejects_unknown_sequences() {
        assert!(unescape(b"a\\q").is_err());
        assert!(unescape(b"a\\").is_err());
        assert!(unescape(b"\\x4").is_err());
        assert!(unescape(b"\\xzz").is_err());
        assert_eq!(unescape(b"\\x41\\x4a").unwrap(), b"AJ");
    }

    #[test]
    fn hex_takes_an_optional_prefix() {
        assert_eq!(decode_hex(b"0x00ff").unwrap(), vec![0, 255]);
        assert_eq!(decode_hex(b"00ff").unwrap(), vec![0, 255]);
        assert!(decode_hex(b"0xf").is_err());
        assert_eq!(Enc::Hex.arg("0X61", "key").unwrap(), b"a");
    }

    #[test]
    fn json_fields_round_trip() {
        let mut m = serde_json::Map::new();
        json_field(&mut m, "key", "café".as_bytes(), false);
        json_field(&mut m, "value", b"\xff\x00", false);
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(text, r#"{"key":"café","value_hex":"ff00"}"#);
        let back: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json_bytes(&back, "key").unwrap().unwrap(),
            "café".as_bytes()
        );
        assert_eq!(json_bytes(&back, "value").unwrap().unwrap(), b"\xff\x00");
        assert_eq!(json_bytes(&back, "other").unwrap(), None);
    }
}
