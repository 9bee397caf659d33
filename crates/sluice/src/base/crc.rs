//! LevelDB's CRC masking, shared by the record log and table block trailers.

const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's CRC mask: rotate right by 15 and add a constant, so that a CRC stored next to the
/// data it covers does not look like data to another CRC.
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(CRC_MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_mask_roundtrip() {
        for v in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(v)), v);
            assert_ne!(mask_crc(v), v);
        }
    }
}
