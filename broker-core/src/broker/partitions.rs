//! Partitions by topic and index (the local replicas; a fetch session's partitions): a map of
//! topics, each a map of partition indexes.
//! A lookup by `(&str, i32)` allocates nothing and compares the topic name only while finding
//! the topic (among a handful of topics, not thousands of partitions); one map keyed by
//! `(String, i32)` made every caller allocate a key and compared the whole name at every level
//! of the tree (a fifth of an idle 4,000-partition broker's CPU went to `memcmp`, a tenth to
//! allocating keys; docs/journal/benchmarks.md). Topic names are shared `Arc<str>`s, so handing one to
//! a fetcher costs a reference count, not a copy.
//!
//! Iterates in (topic, index) order, as the single map did: whatever reaches a trace or an
//! answer keeps its order. Never a hash map.

use super::partition::Partition;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The local replicas.
pub type Partitions = PartitionMap<Partition>;

#[derive(Debug, Clone)]
pub struct PartitionMap<V> {
    topics: BTreeMap<Arc<str>, BTreeMap<i32, V>>,
    len: usize,
}

impl<V> Default for PartitionMap<V> {
    fn default() -> Self {
        PartitionMap { topics: BTreeMap::new(), len: 0 }
    }
}

impl<V> PartitionMap<V> {
    pub fn get(&self, topic: &str, p: i32) -> Option<&V> {
        self.topics.get(topic)?.get(&p)
    }

    pub fn get_mut(&mut self, topic: &str, p: i32) -> Option<&mut V> {
        self.topics.get_mut(topic)?.get_mut(&p)
    }

    /// An entry with its topic's shared name (to keep the key without copying the name).
    pub fn get_named(&self, topic: &str, p: i32) -> Option<(&Arc<str>, &V)> {
        let (name, t) = self.topics.get_key_value(topic)?;
        Some((name, t.get(&p)?))
    }

    /// [`PartitionMap::get_named`], the entry mutable.
    pub fn get_mut_named(&mut self, topic: &str, p: i32) -> Option<(&Arc<str>, &mut V)> {
        use std::ops::Bound::Included;
        let (name, t) = self.topics.range_mut::<str, _>((Included(topic), Included(topic))).next()?;
        Some((name, t.get_mut(&p)?))
    }

    pub fn contains(&self, topic: &str, p: i32) -> bool {
        self.get(topic, p).is_some()
    }

    /// The shared name of a topic with a local replica.
    pub fn topic_name(&self, topic: &str) -> Option<&Arc<str>> {
        self.topics.get_key_value(topic).map(|(k, _)| k)
    }

    /// Adds (or replaces) an entry; returns the one replaced.
    pub fn insert(&mut self, topic: &str, p: i32, part: V) -> Option<V> {
        self.insert_named(topic, || Arc::from(topic), p, part)
    }

    /// [`PartitionMap::insert`] under a name already shared (no allocation for a new topic).
    pub fn insert_shared(&mut self, topic: &Arc<str>, p: i32, part: V) -> Option<V> {
        self.insert_named(topic, || topic.clone(), p, part)
    }

    fn insert_named(&mut self, topic: &str, shared: impl FnOnce() -> Arc<str>, p: i32, part: V) -> Option<V> {
        let replaced = match self.topics.get_mut(topic) {
            Some(t) => t.insert(p, part),
            None => self.topics.entry(shared()).or_default().insert(p, part),
        };
        if replaced.is_none() {
            self.len += 1;
        }
        replaced
    }

    /// Removes an entry (and its topic's with its last one).
    pub fn remove(&mut self, topic: &str, p: i32) -> Option<V> {
        let t = self.topics.get_mut(topic)?;
        let removed = t.remove(&p)?;
        if t.is_empty() {
            self.topics.remove(topic);
        }
        self.len -= 1;
        Some(removed)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry with its topic and index, in (topic, index) order.
    pub fn iter(&self) -> impl Iterator<Item = ((&Arc<str>, i32), &V)> {
        self.topics.iter().flat_map(|(n, t)| t.iter().map(move |(p, part)| ((n, *p), part)))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = ((&Arc<str>, i32), &mut V)> {
        self.topics.iter_mut().flat_map(|(n, t)| t.iter_mut().map(move |(p, part)| ((&*n, *p), part)))
    }

    /// Every (topic, index), in order.
    pub fn keys(&self) -> impl Iterator<Item = (&str, i32)> {
        self.iter().map(|((n, p), _)| (&**n, p))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.topics.values().flat_map(|t| t.values())
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.topics.values_mut().flat_map(|t| t.values_mut())
    }

    /// One topic's entries, by index.
    pub fn topic_mut(&mut self, topic: &str) -> impl Iterator<Item = (i32, &mut V)> {
        self.topics.get_mut(topic).into_iter().flat_map(|t| t.iter_mut().map(|(p, part)| (*p, part)))
    }
}

/// `partitions[("t", 0)]`: the entry, or a panic if there is none (as a map's index does).
impl<V> std::ops::Index<(&str, i32)> for PartitionMap<V> {
    type Output = V;

    fn index(&self, (topic, p): (&str, i32)) -> &V {
        self.get(topic, p).unwrap_or_else(|| panic!("no entry for {topic}-{p}"))
    }
}
