//! Compact, sorted string-keyed maps for a cluster's labels and properties.
//!
//! Why not `BTreeMap<String, _>`: a scheduling pass reads the labels and
//! properties of every cluster in the fleet. With one heap allocation per key
//! and per value, reading one cluster's labels touched a dozen scattered
//! cache lines, and a pass over 10,000 clusters was bound by cache misses.
//! Here all the text of a map lives in one buffer and the entries in one
//! array, so a cluster's labels are a couple of contiguous cache lines.
//!
//! Both maps keep their entries sorted by key and rebuild their buffer on
//! insert: they are built once per cluster and read many times.

use std::collections::BTreeMap;
use std::fmt;

use fleet_api::quantity::Quantity;

/// A byte range in a map's text buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn push(text: &mut String, s: &str) -> Span {
        let start = u32::try_from(text.len()).unwrap_or(u32::MAX);
        text.push_str(s);
        Span { start, len: u32::try_from(s.len()).unwrap_or(u32::MAX) }
    }

    fn of<'t>(&self, text: &'t str) -> &'t str {
        let start = self.start as usize;
        text.get(start..start + self.len as usize).unwrap_or_default()
    }
}

/// A string-keyed map with every key in one buffer, sorted by key.
#[derive(Clone, Default, PartialEq, Eq)]
struct TextMap<V> {
    text: String,
    entries: Vec<(Span, V)>,
}

impl<V: Copy> TextMap<V> {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.of(&self.text).cmp(key))
    }

    fn iter(&self) -> impl Iterator<Item = (&str, V)> + '_ {
        self.entries.iter().map(|(k, v)| (k.of(&self.text), *v))
    }

    /// Builds from `pairs` (later pairs win over earlier ones with the same
    /// key); `value` stores a pair's value, given the text buffer.
    fn build<K: AsRef<str>, X, I>(pairs: I, mut value: impl FnMut(&mut String, &X) -> V) -> TextMap<V>
    where
        I: IntoIterator<Item = (K, X)>,
    {
        let pairs: Vec<(K, X)> = pairs.into_iter().collect();
        let sorted: BTreeMap<&str, &X> = pairs.iter().map(|(k, x)| (k.as_ref(), x)).collect();
        let mut map = TextMap { text: String::new(), entries: Vec::with_capacity(sorted.len()) };
        for (k, x) in sorted {
            let key = Span::push(&mut map.text, k);
            let v = value(&mut map.text, x);
            map.entries.push((key, v));
        }
        map
    }
}

/// A cluster's labels: key → value, sorted by key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// Values are spans in the same buffer as the keys.
    map: TextMap<Span>,
}

impl Labels {
    /// The value of `key`, if the cluster has that label.
    pub fn get(&self, key: &str) -> Option<&str> {
        let i = self.map.position(key).ok()?;
        Some(self.map.entries[i].1.of(&self.map.text))
    }

    /// Sets `key` to `value` (replacing an older value).
    pub fn insert(&mut self, key: &str, value: &str) {
        let mut all: BTreeMap<&str, &str> = self.iter().collect();
        all.insert(key, value);
        *self = all.into_iter().collect();
    }

    /// Every label, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.map.iter().map(|(k, v)| (k, v.of(&self.map.text)))
    }

    /// How many labels there are.
    pub fn len(&self) -> usize {
        self.map.entries.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.map.entries.is_empty()
    }

    /// The labels as a map, for code that takes one (label selectors).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    /// Later pairs win over earlier ones with the same key.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Labels {
        Labels { map: TextMap::build(pairs, |text, v: &V| Span::push(text, v.as_ref())) }
    }
}

impl From<&BTreeMap<String, String>> for Labels {
    fn from(labels: &BTreeMap<String, String>) -> Labels {
        labels.iter().collect()
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A cluster's properties: canonical name → exact value, sorted by name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    map: TextMap<Quantity>,
}

impl Properties {
    /// The value of a property, if the cluster reports it.
    pub fn get(&self, name: &str) -> Option<Quantity> {
        let i = self.map.position(name).ok()?;
        Some(self.map.entries[i].1)
    }

    /// Sets a property (replacing an older value).
    pub fn insert(&mut self, name: &str, value: Quantity) {
        let mut all: BTreeMap<&str, Quantity> = self.iter().collect();
        all.insert(name, value);
        *self = all.into_iter().collect();
    }

    /// Every property, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Quantity)> + '_ {
        self.map.iter()
    }
}

impl<K: AsRef<str>> FromIterator<(K, Quantity)> for Properties {
    /// Later pairs win over earlier ones with the same name.
    fn from_iter<I: IntoIterator<Item = (K, Quantity)>>(pairs: I) -> Properties {
        Properties { map: TextMap::build(pairs, |_, v: &Quantity| *v) }
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn labels_behave_like_a_sorted_map(pairs in proptest::collection::vec(("[a-c]{0,3}", "[x-z]{0,2}"), 0..8)) {
            let expected: BTreeMap<String, String> = pairs.iter().cloned().collect();
            let built: Labels = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut inserted = Labels::default();
            for (k, v) in &pairs {
                inserted.insert(k, v);
            }
            prop_assert_eq!(&built, &inserted);
            prop_assert_eq!(built.to_map(), expected.clone());
            prop_assert_eq!(built.len(), expected.len());
            for key in ["", "a", "ab", "c", "cc", "d"] {
                prop_assert_eq!(built.get(key), expected.get(key).map(String::as_str));
            }
        }

        #[test]
        fn properties_behave_like_a_sorted_map(pairs in proptest::collection::vec(("[a-c]{0,3}", 0i64..5), 0..8)) {
            let expected: BTreeMap<String, Quantity> =
                pairs.iter().map(|(k, v)| (k.clone(), Quantity::from_units(*v))).collect();
            let built: Properties = pairs.iter().map(|(k, v)| (k.as_str(), Quantity::from_units(*v))).collect();
            let mut inserted = Properties::default();
            for (k, v) in &pairs {
                inserted.insert(k, Quantity::from_units(*v));
            }
            prop_assert_eq!(&built, &inserted);
            prop_assert_eq!(built.iter().map(|(k, v)| (k.to_string(), v)).collect::<BTreeMap<_, _>>(), expected.clone());
            for key in ["", "a", "ab", "c", "cc", "d"] {
                prop_assert_eq!(built.get(key), expected.get(key).copied());
            }
        }
    }
}
