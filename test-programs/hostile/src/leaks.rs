//! Attacks that grew the host's memory or tables without bound: profile
//! spans, timed-out waits, inline objects past the store's size, many
//! small objects, live actors past the instance slots, objects naming
//! themselves, a dying actor's teardown calling back into it, a host bug
//! in one task, actors holding guest memory past the node's budget.

use wray::{ActorHandle, ObjectRef};

use crate::raw::{self, mapping, objects, runtime, wit};
use crate::report;

/// Opens `n` profile spans and never closes them; how many the host kept
/// (handles other than `u32::MAX`).
#[wray::remote]
pub(crate) fn spans(n: u32) -> String {
    let kept = (0..n)
        .filter(|_| runtime::profile_begin("span") != u32::MAX)
        .count();
    format!("opened {n}, kept {kept}")
}

/// `n` polls (`wait` with a zero timeout) on an object that does not
/// exist yet.
pub(crate) fn wait_polls_scenario(n: u64) {
    let pending = crate::hangs::sleep_for.remote(60_000u64);
    let id: wit::ObjectId = pending.id().into();
    let ready = (0..n)
        .filter(|_| objects::wait(&[id], 1, Some(0))[0])
        .count();
    println!("wait_polls: {n} polls, ready {ready}");
    wray::cancel(&pending, true, false);
}

/// `n` small values of `size` bytes put and all held: past the store's
/// size they must fail (an error object), not grow the host's heap.
pub(crate) fn inline_flood_scenario(n: u64, size: usize) {
    let value = vec![1u8; size];
    let refs: Vec<ObjectRef<Vec<u8>>> = (0..n).map(|_| wray::put(&value)).collect();
    let first = refs.first().map(|r| r.get().map(|v| v.len()));
    let last = refs.last().map(|r| r.get().map(|v| v.len()));
    if let (Some(first), Some(last)) = (first, last) {
        report("inline_flood first", first);
        report("inline_flood last", last);
    }
}

/// A counter actor.
#[wray::actor]
pub struct Cell {
    n: u64,
}

#[wray::actor]
impl Cell {
    /// Starts at `n`.
    pub fn new(n: u64) -> Self {
        Cell { n }
    }

    /// The value.
    pub fn read(&self) -> u64 {
        self.n
    }
}

/// `n` live actors at once: past the node's limit creation fails with a
/// clear error, and plain tasks keep running.
pub(crate) fn actor_flood_scenario(n: u64) {
    let cells: Vec<ActorHandle<Cell>> = (0..n).map(|i| Cell::remote(i)).collect();
    let reads: Vec<wray::Result<u64>> = cells.iter().map(|c| c.read().remote().get()).collect();
    let ok = reads.iter().filter(|r| r.is_ok()).count();
    println!("actor_flood: {ok} live, {} refused", reads.len() - ok);
    if let Some(Err(e)) = reads.iter().find(|r| r.is_err()) {
        println!("actor_flood refused: {}: {}", e.kind(), e.message());
    }
    report("plain task", crate::ping0.remote().get());
}

/// Objects naming themselves or an unsealed sibling, and a put naming its
/// own future id.
#[wray::remote]
pub(crate) fn self_refs() -> Result<String, String> {
    let err = |e: wit::TaskError| raw::text(&e);
    let a = mapping::reserve(16).map_err(err)?;
    let itself = mapping::seal(a, 0, wit::Codec::Raw, &[a]);
    mapping::seal(a, 0, wit::Codec::Raw, &[]).map_err(err)?;
    let b = mapping::reserve(16).map_err(err)?;
    let c = mapping::reserve(16).map_err(err)?;
    let sibling = mapping::seal(b, 0, wit::Codec::Raw, &[c]);
    mapping::seal(c, 0, wit::Codec::Raw, &[]).map_err(err)?;
    let after = mapping::seal(b, 0, wit::Codec::Raw, &[c]);
    // Puts 0..=2 were a, b, c: the next is put 3.
    let next = raw::my_put(3);
    let named = objects::put(&raw::payload(wit::Codec::Raw, vec![1], vec![next]));
    let read = objects::get(&[named], None);
    Ok(format!(
        "itself: {}; unsealed sibling: {}; sealed sibling: {}; put naming itself: {} {}",
        itself.err().map_or("ok".into(), err),
        sibling.err().map_or("ok".into(), err),
        raw::kind(&after),
        wray::ObjectId::from(named) == wray::ObjectId::from(next),
        raw::kind(&read),
    ))
}

/// An actor that leaves an object unsealed in its instance.
#[wray::actor]
pub struct Holder {}

#[wray::actor]
impl Holder {
    /// A new one.
    pub fn new() -> Self {
        Holder {}
    }

    /// Reserves an object and never seals it; returns its id's parts.
    pub fn reserve_unsealed(&self) -> Result<(u64, u64, u32), String> {
        let id = mapping::reserve(64).map_err(|e| raw::text(&e))?;
        Ok((id.task.hi, id.task.lo, id.index))
    }

    /// Takes an object (waits for it as an argument).
    pub fn take(&self, x: u64) -> u64 {
        x
    }
}

/// Kills an actor whose instance holds an unsealed object that one of its
/// own queued calls waits for: tearing the instance down seals that object
/// with an error, whose waiter reaches back into the actor (this
/// deadlocked when the actor's lock was held while its store dropped).
pub(crate) fn actor_death_scenario() {
    let h = Holder::remote();
    let (hi, lo, index) = match h.reserve_unsealed().remote().get() {
        Ok(parts) => parts,
        Err(e) => return println!("actor_death: {}", e.message()),
    };
    let unsealed: ObjectRef<u64> = ObjectRef::from_id(wray::ObjectId {
        task: wray::TaskId { hi, lo },
        index,
    });
    let waiting = h.take().remote(&unsealed);
    println!("actor_death: killed {}", wray::kill(&h));
    report("actor_death call", waiting.get());
    report("actor_death object", unsealed.get());
}

/// A function the host's test configuration turns into a host panic (a
/// stand-in for a bug in wray): the task must fail, nothing else.
#[wray::remote]
pub(crate) fn boom_point() -> u64 {
    1
}

/// `n` puts of an `i64`, all held; every 1,024th is read back, and the
/// first that holds an error is reported with how many puts came before
/// (`small_puts: refused after N puts: kind: message`), else
/// `small_puts: N puts, all stored`.
pub(crate) fn small_puts_scenario(n: u64) {
    let mut refs: Vec<ObjectRef<i64>> = Vec::new();
    for i in 0..n {
        let r = wray::put(&(i as i64));
        if i % 1024 == 1023 || i + 1 == n {
            if let Err(e) = r.get() {
                let first = refs
                    .iter()
                    .position(|r| r.get().is_err())
                    .unwrap_or(refs.len());
                println!(
                    "small_puts: refused after {first} puts: {}: {}",
                    e.kind(),
                    e.message()
                );
                return;
            }
        }
        refs.push(r);
    }
    println!("small_puts: {} puts, all stored", refs.len());
}

/// An actor holding `mib` MiB of linear memory.
#[wray::actor]
pub struct Hog {
    at: u64,
}

#[wray::actor]
impl Hog {
    /// Grows its memory by `mib` MiB.
    pub fn new(mib: u32) -> Self {
        let at = raw::grow(mib as usize * 16).unwrap_or(0) as u64;
        Hog { at }
    }

    /// Where its memory grew from.
    pub fn at(&self) -> u64 {
        self.at
    }
}

/// Grows a task's memory by `mib` MiB; its old size in bytes.
#[wray::remote]
pub(crate) fn grow_mib(mib: u32) -> Result<u64, String> {
    raw::grow(mib as usize * 16).map(|at| at as u64)
}

/// Actors of `mib` MiB each until the node's guest memory budget refuses
/// one; then a task asking for as much, a plain task, and one more actor
/// once one is killed.
pub(crate) fn guest_memory_scenario(mib: u32) {
    let mut hogs: Vec<ActorHandle<Hog>> = Vec::new();
    let mut refused = None;
    for _ in 0..16 {
        let hog = Hog::remote(mib);
        match hog.at().remote().get() {
            Ok(_) => hogs.push(hog),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    println!("guest_memory: {} hogs live", hogs.len());
    if let Some(e) = refused {
        println!("guest_memory refused hog: {}: {}", e.kind(), e.message());
    }
    report("guest_memory grow task", grow_mib.remote(mib).get());
    report("guest_memory plain task", crate::ping0.remote().get());
    if let Some(hog) = hogs.pop() {
        wray::kill(&hog);
    }
    report(
        "guest_memory after a kill",
        Hog::remote(mib).at().remote().get(),
    );
}
