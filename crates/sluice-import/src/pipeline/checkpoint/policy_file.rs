//! The policy's pending state in a checkpoint: the secondary keys to suppress (of rows the
//! primary index dropped) and to delete (of replaced rows), per index, in one file named by
//! the manifest with its CRC32C.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;

use sluice::coding::{put_varint64, Reader};

use crate::pipeline::merge::policy::EmitCtx;
use crate::ImportError;

/// The policy's suppressions and deletions, per slot, as one file; then the deletion lists
/// past the slots (a columnar table's deletion marks), if any, as a trailer: their count and
/// each list.
pub(crate) fn encode_policy(
    suppress: &[HashMap<Vec<u8>, u32>],
    deletions: &[Vec<Vec<u8>>],
) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint64(&mut out, suppress.len() as u64);
    for (sup, del) in suppress.iter().zip(deletions) {
        let mut keys: Vec<_> = sup.iter().collect();
        keys.sort();
        put_varint64(&mut out, keys.len() as u64);
        for (k, n) in keys {
            put_varint64(&mut out, k.len() as u64);
            out.extend_from_slice(k);
            put_varint64(&mut out, u64::from(*n));
        }
        put_key_list(&mut out, del);
    }
    let extra = deletions.get(suppress.len()..).unwrap_or(&[]);
    if !extra.is_empty() {
        put_varint64(&mut out, extra.len() as u64);
        for del in extra {
            put_key_list(&mut out, del);
        }
    }
    out
}

fn put_key_list(out: &mut Vec<u8>, keys: &[Vec<u8>]) {
    put_varint64(out, keys.len() as u64);
    for k in keys {
        put_varint64(out, k.len() as u64);
        out.extend_from_slice(k);
    }
}

fn key_list(d: &mut Reader<'_>) -> Option<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    for _ in 0..d.varint64()? {
        let len = d.varint64()? as usize;
        v.push(d.bytes(len)?.to_vec());
    }
    Some(v)
}

/// The inverse of [`encode_policy`]; `None` if the bytes do not decode.
#[allow(clippy::type_complexity)]
pub(crate) fn decode_policy(
    bytes: &[u8],
) -> Option<(Vec<HashMap<Vec<u8>, u32>>, Vec<Vec<Vec<u8>>>)> {
    let mut d = Reader::new(bytes);
    let n = d.varint64()? as usize;
    let (mut sup, mut del) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let mut m = HashMap::new();
        for _ in 0..d.varint64()? {
            let len = d.varint64()? as usize;
            let k = d.bytes(len)?.to_vec();
            m.insert(k, u32::try_from(d.varint64()?).ok()?);
        }
        sup.push(m);
        del.push(key_list(&mut d)?);
    }
    if !d.remaining().is_empty() {
        for _ in 0..d.varint64()? {
            del.push(key_list(&mut d)?);
        }
    }
    d.remaining().is_empty().then_some((sup, del))
}

/// Writes the policy state of `ctx` into a new file of `dir` (fsynced) if there is any:
/// its name and CRC32C for the manifest. `seq` makes the name fresh.
pub(crate) fn store_policy(
    dir: &Path,
    ctx: &EmitCtx<'_>,
    seq: u64,
) -> Result<Option<(String, u32)>, ImportError> {
    let empty =
        ctx.suppress.iter().all(HashMap::is_empty) && ctx.deletions.iter().all(Vec::is_empty);
    if empty {
        return Ok(None);
    }
    let bytes = encode_policy(&ctx.suppress, &ctx.deletions);
    write_side_file(dir, format!("policy-{seq:06}.bin"), &bytes).map(Some)
}

/// Writes a checkpoint's side file `name` in `dir` (a new file, fsynced before a checkpoint
/// names it) and returns its name and the CRC32C the checkpoint records for it.
pub(super) fn write_side_file(
    dir: &Path,
    name: String,
    bytes: &[u8],
) -> Result<(String, u32), ImportError> {
    let path = dir.join(&name);
    let mut f = std::fs::File::create_new(&path).map_err(|e| ImportError::io(&path, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| ImportError::io(&path, e))?;
    Ok((name, crc32c::crc32c(bytes)))
}

/// Reads the policy file a checkpoint names.
#[allow(clippy::type_complexity)]
pub(crate) fn load_policy(
    dir: &Path,
    policy: &(String, u32),
) -> Result<(Vec<HashMap<Vec<u8>, u32>>, Vec<Vec<Vec<u8>>>), ImportError> {
    let path = dir.join(&policy.0);
    let bytes = std::fs::read(&path).map_err(|e| ImportError::io(&path, e))?;
    if crc32c::crc32c(&bytes) != policy.1 {
        return Err(ImportError::CannotResume {
            dir: dir.to_path_buf(),
            reason: format!("{} is corrupt: checksum mismatch", policy.0),
        });
    }
    decode_policy(&bytes).ok_or_else(|| ImportError::CannotResume {
        dir: dir.to_path_buf(),
        reason: format!("{} is corrupt", policy.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_round_trips() {
        let mut a = HashMap::new();
        a.insert(b"k1".to_vec(), 3u32);
        a.insert(Vec::new(), 1);
        let sup = vec![HashMap::new(), a];
        let del = vec![vec![b"x".to_vec()], vec![]];
        let bytes = encode_policy(&sup, &del);
        assert_eq!(decode_policy(&bytes), Some((sup, del)));
        assert_eq!(decode_policy(&bytes[..bytes.len() - 1]), None);
    }
}
