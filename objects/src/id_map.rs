//! Hash maps and sets keyed by ids ([`TaskId`], [`ObjectId`], [`ActorId`]),
//! on the hot paths of put, get and submit.
//!
//! They hash with [foldhash](https://docs.rs/foldhash) (the hasher of
//! `hashbrown`), seeded at random per map, instead of the standard
//! library's SipHash-1-3, which took about 8% of the host's time in the
//! `single client put calls` case (perf; ids are 16 to 20 bytes). The keys a guest can choose are only
//! looked up, never inserted (the node mints every id that enters a table,
//! with a random part per job), and the seed is not visible to guests, so
//! a guest cannot steer entries into one bucket.
//!
//! [`TaskId`]: wray_control_plane::TaskId
//! [`ObjectId`]: wray_control_plane::ObjectId
//! [`ActorId`]: wray_control_plane::ActorId

/// A `HashMap` keyed by ids.
pub type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` of ids.
pub type IdSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A map keyed by ids that keeps at most a given number of entries: past
/// it, inserting forgets the entry inserted first (for what a node keeps
/// on behalf of its peers, which must stay bounded whatever they send).
pub struct BoundedIdMap<K, V> {
    map: IdMap<K, V>,
    /// Keys, oldest first.
    order: std::collections::VecDeque<K>,
    max: usize,
}

impl<K: std::hash::Hash + Eq + Copy, V> BoundedIdMap<K, V> {
    /// An empty map of at most `max` entries (at least one).
    pub fn new(max: usize) -> Self {
        Self {
            map: IdMap::default(),
            order: std::collections::VecDeque::new(),
            max: max.max(1),
        }
    }

    /// The value of `key`, inserted with `make` if absent (forgetting the
    /// oldest entry first when the map is full).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        if !self.map.contains_key(&key) {
            self.make_room(key);
        }
        self.map.entry(key).or_insert_with(make)
    }

    /// Sets the value of `key` (forgetting the oldest entry first when
    /// the map is full and `key` is new): its value before.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(slot) = self.map.get_mut(&key) {
            return Some(std::mem::replace(slot, value));
        }
        self.make_room(key);
        self.map.insert(key, value);
        None
    }

    /// Forgets the oldest entry if the map is full, and notes `key` (new)
    /// as the newest.
    fn make_room(&mut self, key: K) {
        if self.map.len() >= self.max {
            if let Some(oldest) = self.order.pop_front() {
                self.map.remove(&oldest);
            }
        }
        self.order.push_back(key);
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    /// Removes `key`: its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let value = self.map.remove(key)?;
        self.order.retain(|k| k != key);
        Some(value)
    }

    /// The keys, oldest first.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.order.iter()
    }

    /// The values, in no order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values()
    }

    /// Removes every entry `pick` takes: those entries, in no order.
    pub fn take_where(&mut self, mut pick: impl FnMut(&K, &V) -> bool) -> Vec<(K, V)> {
        let keys: Vec<K> = self
            .map
            .iter()
            .filter(|(k, v)| pick(k, v))
            .map(|(k, _)| *k)
            .collect();
        if keys.is_empty() {
            return Vec::new();
        }
        let taken: Vec<(K, V)> = keys
            .into_iter()
            .filter_map(|k| self.map.remove_entry(&k))
            .collect();
        let map = &self.map;
        self.order.retain(|k| map.contains_key(k));
        taken
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::BoundedIdMap;

    #[test]
    fn a_bounded_map_forgets_its_oldest_entry_when_full() {
        let mut map = BoundedIdMap::new(2);
        *map.get_or_insert_with(1u64, || 10) += 1;
        map.get_or_insert_with(2, || 20);
        map.get_or_insert_with(1, || 0);
        map.get_or_insert_with(3, || 30);
        assert_eq!(map.get(&1), None, "the oldest went");
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(map.remove(&2), Some(20));
        assert_eq!(map.len(), 1);
        map.get_or_insert_with(4, || 40);
        assert_eq!(map.get(&3), Some(&30));
        assert_eq!(map.insert(4, 41), Some(40));
        assert_eq!(map.insert(5, 50), None);
        assert_eq!(map.get(&3), None);
    }

    #[test]
    fn entries_taken_where_a_predicate_holds_leave_the_order_too() {
        let mut map = BoundedIdMap::new(3);
        for k in 1u64..=3 {
            map.insert(k, k * 10);
        }
        let mut taken = map.take_where(|k, _| k % 2 == 1);
        taken.sort_unstable();
        assert_eq!(taken, [(1, 10), (3, 30)]);
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), [2]);
        assert_eq!(map.values().copied().collect::<Vec<_>>(), [20]);
        assert!(map.take_where(|_, _| false).is_empty());
        // Room again for two: nothing older is forgotten.
        map.insert(4, 40);
        map.insert(5, 50);
        assert_eq!(map.get(&2), Some(&20));
    }
}
