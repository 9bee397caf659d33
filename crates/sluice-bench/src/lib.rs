//! Library side of the benchmark harness: the BENCH-SPEC input generator shared by every
//! workload (and by tests that check it against the spec's SHA-256 values).

pub mod gen;
