//! The iterators a read is built from: merging, level, range-deletion aggregation and the
//! user-facing [`DbIterator`](db_iter::DbIterator). The protocol they share is
//! [`InternalIterator`](crate::base::iterator::InternalIterator).

pub mod db_iter;
pub mod level;
pub mod merging;
pub mod range_del;
