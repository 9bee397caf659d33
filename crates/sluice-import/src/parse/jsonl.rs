//! JSON-lines records: one object per line, numbers taken from their text.

use std::borrow::Cow;

use crate::input::next_line;
use crate::types::Value;

use super::{
    reject, row_error, src_pos, Chunk, ChunkOutput, Encoder, ParseConfig, RowError, Written,
};

/// A JSON object's members in input order, each value as its raw JSON text (numbers keep
/// every digit as written; duplicate keys are all kept, for the caller to refuse).
pub(super) struct JsonRecord<'a>(Vec<(Cow<'a, str>, &'a serde_json::value::RawValue)>);

/// A JSON string, borrowed from the input when it has no escapes.
pub(super) struct JsonStr<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for JsonStr<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JsonStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde::Deserialize<'de> for JsonRecord<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JsonRecord<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = m.next_entry::<JsonStr<'de>, _>()? {
                    members.push((k.0, v));
                }
                Ok(JsonRecord(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// One member's value for column `col`, from its raw JSON text.
pub(super) fn json_value<'a>(
    enc: &Encoder<'_>,
    col: usize,
    raw: &'a serde_json::value::RawValue,
) -> Result<Value<'a>, RowError> {
    let c = &enc.cfg.table.columns[col];
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'n') => Ok(Value::Null),
        Some(b'"') => {
            let s: JsonStr<'a> = serde_json::from_str(text)
                .map_err(|e| row_error(Some(&c.name), format!("bad JSON string: {e}")))?;
            match s.0 {
                Cow::Borrowed(b) => Ok(enc.field(col, b.as_bytes(), Written::Text)?),
                Cow::Owned(o) => Ok(enc
                    .field(col, o.as_bytes(), Written::Text)
                    .map(Value::into_owned)?),
            }
        }
        Some(b'{' | b'[') => Err(row_error(
            Some(&c.name),
            format!(
                "{text} is not {} (nested JSON is not supported)",
                c.ty.with_article()
            ),
        )),
        // A number or true/false: its text exactly as written.
        _ => Ok(enc.field(col, text.as_bytes(), Written::Literal)?),
    }
}

pub(super) fn parse_jsonl(
    cfg: &ParseConfig,
    chunk: &Chunk,
    enc: &mut Encoder<'_>,
    out: &mut ChunkOutput,
) {
    let ncols = cfg.table.columns.len();
    let mut line_no = chunk.first_line;
    let mut pos = 0usize;
    let data = &chunk.data;
    let mut member_of: Vec<Option<usize>> = vec![None; ncols];
    while pos < data.len() {
        let (_, end) = next_line(data, pos);
        let rec = &data[pos..end];
        let line = line_no;
        let src = src_pos(chunk.file, line);
        let offset = chunk.offset + pos as u64;
        pos = end;
        line_no += 1;
        if rec.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let result = (|| {
            let obj: JsonRecord<'_> = serde_json::from_slice(rec)
                .map_err(|e| row_error(None, format!("not a JSON object: {e}")))?;
            // Keys name columns as CSV headers do (ASCII case-insensitively; names are unique
            // that way): two keys for one column are an error, never a silent choice.
            member_of.iter_mut().for_each(|m| *m = None);
            for (n, (k, _)) in obj.0.iter().enumerate() {
                let col = match cfg.table.column(k) {
                    Some(i) if !cfg.table.columns[i].hidden => i,
                    _ => {
                        return Err(row_error(
                            None,
                            format!("key {k:?} is not a column of {}", cfg.table.name),
                        ))
                    }
                };
                if let Some(first) = member_of[col] {
                    let other = &obj.0[first].0;
                    return Err(row_error(
                        None,
                        if other == k {
                            format!("key {k:?} appears twice")
                        } else {
                            format!(
                                "keys {other:?} and {k:?} both name column {}",
                                cfg.table.columns[col].name
                            )
                        },
                    ));
                }
                member_of[col] = Some(n);
            }
            let mut values: Vec<Value<'_>> = vec![Value::Null; ncols];
            for (col, m) in member_of.iter().enumerate() {
                if let Some(n) = m {
                    values[col] = json_value(enc, col, obj.0[*n].1)?;
                }
            }
            enc.emit(&mut values, offset, src, out)
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, line, e, rec));
        }
    }
}
