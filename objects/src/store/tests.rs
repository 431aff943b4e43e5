use super::*;
use crate::Holds;
use std::sync::atomic::{AtomicUsize, Ordering};
use wray_control_plane::TaskId;

fn value(b: &[u8]) -> Object {
    Object::Value {
        codec: Codec::Raw,
        data: Data::inline(b),
        refs: Refs::default(),
    }
}

fn id(i: u32) -> ObjectId {
    TaskId::driver(JobId(0)).return_object(i).unwrap()
}

fn limits(inline_bytes: usize, spilled_objects: usize) -> StoreLimits {
    StoreLimits {
        inline_bytes,
        spilled_objects,
    }
}

#[test]
fn unheld_objects_are_freed_with_what_they_contain() {
    let store = ObjectStore::new();
    let (inner, outer) = (id(1), id(2));
    store.register_pending(inner);
    store.acquire(&inner);
    store.seal(inner, value(b"inner"));
    store.register_pending(outer);
    store.acquire(&outer);
    let holds_inner = Object::Value {
        codec: Codec::Raw,
        data: Data::inline(b"o"),
        refs: Refs::from(vec![inner]),
    };
    store.seal(outer, holds_inner);
    // The driver drops its ref to `inner`: `outer` still holds it.
    store.release(&inner);
    assert!(store.get(&inner).is_some());
    assert_eq!(store.stats().objects, 2);
    // Dropping `outer` frees both.
    store.release(&outer);
    let stats = store.stats();
    assert_eq!((stats.objects, stats.bytes, stats.peak_bytes), (0, 0, 6));
    assert_eq!(stats.unmatched_releases, 0);
}

#[test]
fn the_free_hook_hears_each_watched_object_once_however_it_is_freed() {
    let store = ObjectStore::new();
    let heard = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let h = heard.clone();
    store.set_free_hook(Box::new(move |id| h.lock().push(id)));
    // Watched, held directly, then inside a value: freed with the value.
    let (watched, outer, plain) = (id(1), id(2), id(3));
    for i in [watched, outer, plain] {
        store.register_pending(i);
        store.acquire(&i);
    }
    assert!(store.watch_free(&watched));
    assert!(!store.watch_free(&id(9)), "no such object");
    store.seal(watched, Object::empty());
    store.seal(
        outer,
        Object::Value {
            codec: Codec::Raw,
            data: Data::inline(b"o"),
            refs: Refs::from(vec![watched]),
        },
    );
    store.seal(plain, value(b"p"));
    store.release(&watched);
    assert!(heard.lock().is_empty(), "the value still holds it");
    store.release(&plain);
    store.release(&outer);
    assert_eq!(*heard.lock(), [watched], "only the watched one, once");
    // A job's end frees what it watched too.
    let next = id(4);
    store.register_pending(next);
    store.acquire(&next);
    store.watch_free(&next);
    store.end_job(JobId(0));
    assert_eq!(*heard.lock(), [watched, next]);
}

#[test]
fn an_object_naming_itself_is_still_freed() {
    let store = ObjectStore::new();
    store.register_pending(id(1));
    store.acquire(&id(1));
    let selfish = Object::Value {
        codec: Codec::Raw,
        data: Data::inline(b"me"),
        refs: Refs::from(vec![id(1), id(1)]),
    };
    assert!(store.seal(id(1), selfish));
    store.release(&id(1));
    assert_eq!(store.stats().objects, 0);
    assert_eq!(store.stats().unmatched_releases, 0);
}

#[test]
fn double_releases_are_counted_not_hidden() {
    let store = ObjectStore::new();
    store.register_pending(id(1));
    store.acquire(&id(1));
    store.acquire(&id(1));
    store.release(&id(1));
    store.release(&id(1));
    // Pending and unheld: kept until sealed. A third release is a bug.
    store.release(&id(1));
    assert_eq!(store.stats().unmatched_releases, 1);
    // Releasing what does not exist at all is not (its job may have ended).
    store.release(&id(9));
    assert_eq!(store.stats().unmatched_releases, 1);
}

#[test]
fn large_values_go_to_the_arena_or_spill_and_free_their_space() {
    let dir = tempfile::tempdir().unwrap();
    let arena = arena::Arena::create(dir.path(), 1 << 20, false).unwrap();
    let spill = dir.path().join("spill");
    let store = ObjectStore::with_limits(Some(arena.clone()), Some(spill.clone()), limits(64, 4));
    let small = store.value(Codec::Raw, &[1; 40], Refs::default()).unwrap();
    assert!(matches!(
        &small,
        Object::Value {
            data: Data::Inline { .. },
            ..
        }
    ));
    assert_eq!(store.stats().inline_bytes, 40);
    drop(small);
    assert_eq!(store.stats().inline_bytes, 0);
    let big = vec![7u8; INLINE_MAX];
    store.register_pending(id(1));
    store.acquire(&id(1));
    store.seal(
        id(1),
        store.value(Codec::Raw, &big, Refs::default()).unwrap(),
    );
    let sealed = store.get(&id(1)).unwrap();
    let Object::Value {
        data: Data::Shared(block),
        ..
    } = &*sealed
    else {
        panic!("not shared")
    };
    assert_eq!(block.bytes(), &big[..]);
    let used = arena.capacity() - arena.free_bytes();
    assert_eq!(used, INLINE_MAX.div_ceil(arena::PAGE) * arena::PAGE);
    drop(sealed);
    store.release(&id(1));
    assert_eq!(arena.free_bytes(), arena.capacity());
    // Too large for the arena: spilled to a nameless file, not lost.
    let huge_bytes = vec![1u8; 2 << 20];
    store.register_pending(id(2));
    store.acquire(&id(2));
    store.seal(
        id(2),
        store
            .value(Codec::Raw, &huge_bytes, Refs::default())
            .unwrap(),
    );
    let listed = store.list();
    assert_eq!(listed.len(), 1);
    let first = &listed[0];
    assert_eq!(
        (first.size, first.location, first.holders),
        (2 << 20, "spilled", 1)
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "no names");
    let huge = store.get(&id(2)).unwrap();
    let Object::Value { data, .. } = &*huge else {
        panic!("not a value")
    };
    assert_eq!(data.bytes(), &huge_bytes[..]);
    assert!(data.file_range().is_some());
    assert_eq!(store.stats().spilled, 1);
    drop(huge);
    store.release(&id(2));
    assert_eq!(store.stats().spilled, 0);
}

#[test]
fn a_value_that_fits_nowhere_is_an_error_naming_each_place() {
    let dir = tempfile::tempdir().unwrap();
    let arena = arena::Arena::create(dir.path(), 1 << 20, false).unwrap();
    let store = ObjectStore::with_limits(Some(arena), Some(dir.path().into()), limits(1000, 1));
    let small = [0u8; 600];
    let kept = store.value(Codec::Raw, &small, Refs::default()).unwrap();
    // The inline budget is spent: small values go to the arena next.
    let in_arena = store.value(Codec::Raw, &small, Refs::default()).unwrap();
    assert!(matches!(
        in_arena,
        Object::Value {
            data: Data::Shared(_),
            ..
        }
    ));
    let big = vec![1u8; 2 << 20];
    let spilled = store.value(Codec::Raw, &big, Refs::default()).unwrap();
    let err = store.value(Codec::Raw, &big, Refs::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("object store full"), "{msg}");
    assert!(msg.contains("1 objects spilled already"), "{msg}");
    assert!(msg.contains("600 of 1000 bytes of inline"), "{msg}");
    drop((kept, in_arena, spilled));
    assert!(store.value(Codec::Raw, &big, Refs::default()).is_ok());
}

#[test]
fn a_result_nobody_holds_is_freed_when_sealed() {
    let store = ObjectStore::new();
    store.register_pending(id(1));
    store.acquire(&id(1));
    store.release(&id(1)); // pending: kept until sealed
    assert!(store.exists(&id(1)));
    store.seal(id(1), value(b"x"));
    assert!(!store.exists(&id(1)));
    // Releasing or holding what does not exist is harmless.
    store.release(&id(1));
    assert!(!store.acquire(&id(1)));
}

#[test]
fn only_expected_objects_can_be_sealed() {
    let store = ObjectStore::new();
    assert!(!store.seal(id(5), value(b"forged")));
    assert!(!store.exists(&id(5)));
}

#[test]
fn seal_wakes_waiters_once_and_is_immutable() {
    let store = ObjectStore::new();
    let id = id(1);
    assert!(matches!(
        store.subscribe(&id, Box::new(|| {})),
        Subscription::Unknown
    ));
    store.register_pending(id);
    store.acquire(&id);
    let fired = Arc::new(AtomicUsize::new(0));
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let f = fired.clone();
        let sub = store.subscribe(
            &id,
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let Subscription::Pending(token) = sub else {
            panic!("not pending")
        };
        tokens.push(token);
    }
    // A wait that gave up takes its waiter back: it never runs.
    store.unsubscribe(&id, tokens[1]);
    assert!(store.get(&id).is_none());
    assert!(store.seal(id, value(b"one")));
    assert_eq!(fired.load(Ordering::SeqCst), 2);
    assert!(!store.seal(id, value(b"two")));
    assert_eq!(*store.get(&id).unwrap(), value(b"one"));
    assert!(matches!(
        store.subscribe(&id, Box::new(|| {})),
        Subscription::Ready
    ));
    let stats = store.stats();
    assert_eq!((stats.objects, stats.bytes, stats.peak_bytes), (1, 3, 3));
}

#[test]
fn ending_a_job_frees_its_objects_cycles_included() {
    let store = ObjectStore::new();
    let (a, b, pending) = (id(1), id(2), id(3));
    let other = TaskId::driver(JobId(1)).return_object(0).unwrap();
    for x in [a, b, pending, other] {
        store.register_pending(x);
        store.acquire(&x);
    }
    // a -> b -> a: a cycle reference counting alone never frees.
    let pointing = |to: ObjectId| Object::Value {
        codec: Codec::Raw,
        data: Data::inline(b"c"),
        refs: Refs::from(vec![to]),
    };
    store.seal(a, pointing(b));
    store.seal(b, pointing(a));
    store.release(&a);
    store.release(&b);
    assert_eq!(store.stats().objects, 4);
    let woken = Arc::new(AtomicUsize::new(0));
    let w = woken.clone();
    store.subscribe(
        &pending,
        Box::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let freed = store.end_job(JobId(0));
    assert_eq!(freed, 3);
    assert_eq!(woken.load(Ordering::SeqCst), 1, "waiters are woken");
    // Another job's object is untouched.
    assert_eq!(store.list().len(), 1);
    assert!(store.exists(&other));
    assert_eq!(store.stats().unmatched_releases, 0);
}

#[test]
fn a_guests_refs_count_once_each_and_are_charged_to_the_inline_budget() {
    let store = ObjectStore::with_limits(None, None, limits(100, 4));
    let refs = store.refs(vec![id(2), id(1), id(2), id(1)]).unwrap();
    assert_eq!(&*refs, &[id(1), id(2)]);
    let each = std::mem::size_of::<ObjectId>();
    assert_eq!(store.stats().inline_bytes, 2 * each);
    let value = store.value(Codec::Raw, &[1; 4], refs).unwrap();
    assert_eq!(store.stats().inline_bytes, 2 * each + 4);
    drop(value);
    assert_eq!(store.stats().inline_bytes, 0);
    let many: Vec<ObjectId> = (1..=100).map(id).collect();
    let full = store.refs(many).unwrap_err();
    assert_eq!(full.size, 100 * each);
    assert!(full.to_string().contains("refs stay on the heap"), "{full}");
}

/// Bytes the allocator has handed out and not taken back (glibc's
/// `mallinfo2`: small blocks and mapped ones).
fn heap_in_use() -> usize {
    // SAFETY: a plain call that fills in a struct.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// Set in the child process that measures what objects cost.
const MEASURE: &str = "WRAY_MEASURE_OBJECT_COST";

#[test]
fn small_objects_cost_what_the_store_charges() {
    if std::env::var_os(MEASURE).is_some() {
        return measure_object_cost();
    }
    // Measured in a process of its own: the heap of one that ran other
    // tests holds their freed chunks and allocator state.
    // This test's path inside the crate (what `--exact` matches).
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let test = format!("{module}::small_objects_cost_what_the_store_charges");
    let out = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(MEASURE, "1")
        .output()
        .expect("the measuring process runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.find("object cost:").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no measurement in:\n{text}"));
    let numbers: Vec<usize> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [per_object, charged] = numbers[..] else {
        panic!("two numbers in `{line}`");
    };
    println!("{line}");
    assert!(
        per_object <= charged,
        "an object takes {per_object} bytes of heap, more than the {charged} charged"
    );
}

/// Holds 229,377 small sealed objects (just past a resize of both hash
/// tables, 7/8 of 2^18 entries plus one: the most each entry costs) and
/// prints what each took of the heap and what the store charged.
fn measure_object_cost() {
    const N: u32 = 229_377;
    let store = ObjectStore::with_limits(None, None, StoreLimits::default());
    let root = TaskId::driver(JobId(7));
    let mut holds = Holds::default();
    // An i64 as the SDK writes it: a 16-byte header and 8 bytes.
    let value = [7u8; 24];
    let before = heap_in_use();
    for i in 0..N {
        let id = root.put_object(i).expect("a put id");
        assert_eq!(store.admit(1), Ok(None));
        store.register_pending(id);
        holds.hold(&store, id).expect("held");
        let object = store
            .value(Codec::Rkyv, &value, Default::default())
            .expect("stored");
        assert!(store.seal(id, object));
    }
    let per_object = (heap_in_use() - before) / N as usize;
    let charged = store.stats().inline_bytes / N as usize;
    assert_eq!(charged, OBJECT_OVERHEAD + value.len());
    println!("object cost: {per_object} bytes of heap each, {charged} charged");
    holds.release_all(&store);
    assert_eq!(store.stats().objects, 0);
    assert_eq!(store.stats().inline_bytes, 0, "everything given back");
}

/// Threads putting, nesting and releasing at once, across the table's
/// shards (a container's free releases what it holds in other shards):
/// every object is freed once, no release goes unmatched, and the byte
/// count comes back to zero.
#[test]
fn threads_putting_and_releasing_at_once_free_everything_once() {
    const THREADS: u64 = 4;
    const ROUNDS: u32 = 300;
    let store = Arc::new(ObjectStore::new());
    let heard = Arc::new(AtomicUsize::new(0));
    let h = heard.clone();
    store.set_free_hook(Box::new(move |_| {
        h.fetch_add(1, Ordering::Relaxed);
    }));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let task = TaskId::driver(JobId(t + 1));
                for round in 0..ROUNDS {
                    let base = round * 4;
                    let leaves: Vec<ObjectId> =
                        (0..3).map(|k| task.put_object(base + k).unwrap()).collect();
                    for leaf in &leaves {
                        store.register_pending(*leaf);
                        store.acquire(leaf);
                        assert!(store.seal(*leaf, value(b"leaf")));
                    }
                    let outer = task.put_object(base + 3).unwrap();
                    store.register_pending(outer);
                    store.acquire(&outer);
                    assert!(store.watch_free(&outer));
                    let holds = Object::Value {
                        codec: Codec::Raw,
                        data: Data::inline(b"outer"),
                        refs: Refs::from(leaves.clone()),
                    };
                    assert!(store.seal(outer, holds));
                    // Sealing it again is refused, and what the refused
                    // value held is given back.
                    let again = Object::Value {
                        codec: Codec::Raw,
                        data: Data::inline(b"again"),
                        refs: Refs::from(leaves.clone()),
                    };
                    assert!(!store.seal(outer, again));
                    for leaf in &leaves {
                        store.release(leaf);
                        // The container still holds it.
                        assert!(store.get(leaf).is_some());
                    }
                    store.release(&outer);
                    for leaf in &leaves {
                        assert!(!store.exists(leaf));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = store.stats();
    assert_eq!((stats.objects, stats.bytes), (0, 0));
    assert_eq!(stats.unmatched_releases, 0);
    assert_eq!(stats.inline_bytes, 0);
    assert_eq!(
        heard.load(Ordering::Relaxed),
        (THREADS * u64::from(ROUNDS)) as usize
    );
}

/// A pass over few ids (a lock per lookup) and over many (every shard
/// locked once) see the same pending objects.
#[test]
fn pending_lookups_agree_for_few_ids_and_many() {
    let store = ObjectStore::new();
    let ids: Vec<ObjectId> = (1..=200).map(id).collect();
    for (i, id) in ids.iter().enumerate() {
        store.register_pending(*id);
        store.acquire(id);
        if i % 2 == 0 {
            assert!(store.seal(*id, value(b"v")));
        }
    }
    let count =
        |n: usize| store.with_pending(n, |pending| ids.iter().filter(|id| pending(id)).count());
    assert_eq!(count(ids.len()), 100);
    assert_eq!(count(1), 100);
    let unknown = TaskId::driver(JobId(9)).return_object(1).unwrap();
    assert!(!store.with_pending(1, |pending| pending(&unknown)));
    assert!(!store.with_pending(1000, |pending| pending(&unknown)));
}
