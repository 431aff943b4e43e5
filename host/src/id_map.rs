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
