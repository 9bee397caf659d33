//! The write-ahead log: the LevelDB record [`log`] format (also framing the MANIFEST) and the
//! [`batch`] format of its records.

pub mod batch;
pub mod log;
