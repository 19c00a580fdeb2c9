//! Kept so existing paths compile: the formatters live in [`crate::units`], the one module that
//! spells numbers for people.

pub use crate::units::{format_latency_ns, format_mib_per_sec, MIB};
