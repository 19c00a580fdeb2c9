//! The kinds of I/O a run issues ([`OpKind`]) and the table every per-kind figure lives in
//! ([`PerOp`]): counts, bytes, latency histograms, rates and shares are one `PerOp` each, from
//! the worker's counters to the report, the table, the live line, the JSON, the merged
//! histograms and the hdr-log. Code that handles figures loops over [`OpKind::ALL`]; only the
//! ring (how an op is submitted) and the workload patterns (which ops a pattern issues) name
//! a kind.
//!
//! Adding a kind: a variant here (with its name and what its buffer is), its submission in
//! `ring.rs`, and the patterns that issue it in `workload.rs`.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One kind of I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum OpKind {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A trim: discard on a block device, a punched hole in a file (fio's `trim`).
    Trim,
}

/// How an op kind uses its I/O buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufferUse {
    /// The kernel fills it (a read): the I/O's own slot, never a write's source.
    Fill,
    /// The kernel takes the data from it (a write): a block of the write pool.
    Source,
    /// No buffer (a trim).
    None,
}

impl OpKind {
    /// Number of kinds: the length of every [`PerOp`].
    pub const COUNT: usize = 3;
    /// Every kind, in the order tables, JSON and logs list them.
    pub const ALL: [OpKind; OpKind::COUNT] = [OpKind::Read, OpKind::Write, OpKind::Trim];

    /// The kind's name in JSON keys, table rows and hdr-log tags ("read", "write", "trim").
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Trim => "trim",
        }
    }

    /// What the I/O does with a buffer.
    pub(crate) fn buffer_use(self) -> BufferUse {
        match self {
            OpKind::Read => BufferUse::Fill,
            OpKind::Write => BufferUse::Source,
            OpKind::Trim => BufferUse::None,
        }
    }

    /// Whether the I/O changes what the device holds: such workloads need consent and pass
    /// the write-safety checks.
    pub fn changes_data(self) -> bool {
        self.buffer_use() != BufferUse::Fill
    }

    /// The completion result of a whole I/O of `len` bytes: the bytes moved, or 0 for an op
    /// that moves none (a discard or a punched hole reports only success).
    pub fn success_result(self, len: u32) -> i32 {
        match self.buffer_use() {
            BufferUse::None => 0,
            _ => len as i32,
        }
    }

    /// Position in [`OpKind::ALL`] and in a [`PerOp`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kind named `name` ([`OpKind::name`]).
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value per [`OpKind`], indexed by it. In JSON, a map from each kind's name to its value
/// (`{"read": .., "write": .., "trim": ..}`); a kind missing from the input reads as the
/// default, so reports written before a kind existed still load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PerOp<T>([T; OpKind::COUNT]);

impl<T> PerOp<T> {
    /// A table whose value for each kind is `f(kind)`.
    pub fn from_fn(mut f: impl FnMut(OpKind) -> T) -> PerOp<T> {
        PerOp(OpKind::ALL.map(&mut f))
    }

    /// This table with `value` for `op`: `PerOp::default().with(OpKind::Read, 5)`.
    pub fn with(mut self, op: OpKind, value: T) -> PerOp<T> {
        self[op] = value;
        self
    }

    /// Every kind with its value, in [`OpKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (OpKind, &T)> {
        OpKind::ALL.into_iter().zip(self.0.iter())
    }

    /// Every kind with its value, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (OpKind, &mut T)> {
        OpKind::ALL.into_iter().zip(self.0.iter_mut())
    }

    /// The values, in [`OpKind::ALL`] order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.iter()
    }

    /// A table of `f(kind, value)` for each kind.
    pub fn map<'a, U>(&'a self, mut f: impl FnMut(OpKind, &'a T) -> U) -> PerOp<U> {
        PerOp::from_fn(|op| f(op, &self[op]))
    }

    /// Writes each kind's value into `map` under `key(kind)`: the flat JSON forms
    /// (`read_iops`, `reads`) that a plain map of names would not give.
    pub fn serialize_keyed<M: SerializeMap>(
        &self,
        map: &mut M,
        key: impl Fn(OpKind) -> String,
    ) -> Result<(), M::Error>
    where
        T: Serialize,
    {
        for (op, value) in self.iter() {
            map.serialize_entry(&key(op), value)?;
        }
        Ok(())
    }
}

impl PerOp<u64> {
    /// The sum over every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds another table kind by kind.
    pub fn add(&mut self, other: &PerOp<u64>) {
        for (op, v) in self.iter_mut() {
            *v += other[op];
        }
    }
}

impl PerOp<f64> {
    /// The sum over every kind.
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }
}

impl<T> Index<OpKind> for PerOp<T> {
    type Output = T;

    fn index(&self, op: OpKind) -> &T {
        &self.0[op.index()]
    }
}

impl<T> IndexMut<OpKind> for PerOp<T> {
    fn index_mut(&mut self, op: OpKind) -> &mut T {
        &mut self.0[op.index()]
    }
}

impl<T: Serialize> Serialize for PerOp<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(OpKind::COUNT))?;
        self.serialize_keyed(&mut map, |op| op.name().to_string())?;
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for PerOp<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(KeyedVisitor {
            key: |name: &str| OpKind::from_name(name),
            marker: PhantomData,
        })
    }
}

/// Reads a map whose keys `key` turns into op kinds (other keys are skipped): the reverse of
/// [`PerOp::serialize_keyed`], for types that write a `PerOp` under their own keys.
#[non_exhaustive]
pub struct KeyedVisitor<T, K> {
    /// Turns a key into the kind it holds, or `None` for a key to skip.
    pub key: K,
    /// The value type.
    pub marker: PhantomData<T>,
}

impl<T, K> KeyedVisitor<T, K> {
    /// A visitor that turns each key into its kind with `key` (`None`: skip the entry).
    pub fn new(key: K) -> KeyedVisitor<T, K> {
        KeyedVisitor {
            key,
            marker: PhantomData,
        }
    }
}

impl<'de, T, K> Visitor<'de> for KeyedVisitor<T, K>
where
    T: Deserialize<'de> + Default,
    K: Fn(&str) -> Option<OpKind>,
{
    type Value = PerOp<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map with one entry per I/O kind")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PerOp<T>, A::Error> {
        let mut ops = PerOp::<T>::from_fn(|_| T::default());
        while let Some(name) = map.next_key::<String>()? {
            match (self.key)(&name) {
                Some(op) => ops[op] = map.next_value()?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_indexed_by_kind_and_reads_missing_kinds_as_default() {
        let mut t = PerOp::<u64>::default();
        t[OpKind::Write] = 3;
        t[OpKind::Trim] = 4;
        assert_eq!(t.total(), 7);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"read":0,"write":3,"trim":4}"#);
        let old: PerOp<u64> = serde_json::from_str(r#"{"read":5,"write":6}"#).unwrap();
        assert_eq!(old[OpKind::Read], 5);
        assert_eq!(old[OpKind::Trim], 0);
        assert!(OpKind::ALL
            .iter()
            .all(|op| OpKind::from_name(op.name()) == Some(*op)));
    }
}
