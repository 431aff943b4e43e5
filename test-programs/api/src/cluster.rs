//! Scenarios for a cluster of nodes (`cluster_bytes`, `cluster_spread`):
//! tasks that ask for a resource only some nodes have, so that they run
//! on another node than their driver's.

use std::time::Duration;

use wray::{ActorHandle, ObjectRef};

/// FNV-1a (64 bit) of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The length and FNV-1a of `bytes`, on a node with an accelerator.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn digest_on_accelerator(bytes: Vec<u8>) -> (u64, u64) {
    (bytes.len() as u64, fnv(&bytes))
}

/// Sleeps `ms`, then returns `i`, on a node with an accelerator.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn slow_on_accelerator(ms: u64, i: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    i
}

/// `cluster_bytes MIB`: puts MIB MiB here, digests them on a node with an
/// accelerator, and checks the digest against its own.
pub(crate) fn cluster_bytes(mib: usize) -> wray::Result<()> {
    let bytes: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
    let want = (bytes.len() as u64, fnv(&bytes));
    let put: ObjectRef<Vec<u8>> = wray::put(&bytes);
    drop(bytes);
    let got = digest_on_accelerator.remote(&put).get()?;
    println!(
        "cluster_bytes {} {}",
        got.0,
        if got == want { "match" } else { "differ" }
    );
    Ok(())
}

/// `cluster_spread N MS`: N tasks of MS ms each on accelerator nodes;
/// their sum.
pub(crate) fn cluster_spread(n: u64, ms: u64) -> wray::Result<()> {
    let refs: Vec<ObjectRef<u64>> = (0..n).map(|i| slow_on_accelerator.remote(ms, i)).collect();
    let sum: u64 = wray::get_all(&refs)?.iter().sum();
    println!("cluster_spread {sum}");
    Ok(())
}

/// The sum of `refs` (refs inside a value, unresolved), on a node with an
/// accelerator.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn sum_on_accelerator(refs: Vec<ObjectRef<u64>>) -> wray::Result<u64> {
    Ok(wray::get_all(&refs)?.into_iter().sum())
}

/// Sums the values the refs inside `outer`'s values name (two levels down)
/// on a node with an accelerator.
#[wray::remote(resources = {"accelerator": 1})]
pub(crate) fn deep_sum_on_accelerator(
    outer: Vec<ObjectRef<Vec<ObjectRef<u64>>>>,
) -> wray::Result<u64> {
    let mut sum = 0;
    for middle in outer {
        for inner in middle.get()? {
            sum += inner.get()?;
        }
    }
    Ok(sum)
}

/// `cluster_nested_refs`: refs to tasks still running, inside a value,
/// passed to a task on another node: their sum; then refs to such tasks
/// two levels down (inside an object put here, whose ref is inside the
/// value passed): their sum.
pub(crate) fn cluster_nested_refs() -> wray::Result<()> {
    let refs: Vec<ObjectRef<u64>> = (1..=4u64)
        .map(|i| slow_on_accelerator.remote(300, i))
        .collect();
    println!("nested_refs {}", sum_on_accelerator.remote(refs).get()?);
    let middle: Vec<ObjectRef<Vec<ObjectRef<u64>>>> = (0..2u64)
        .map(|m| {
            let inner: Vec<ObjectRef<u64>> = (1..=2u64)
                .map(|i| slow_on_accelerator.remote(300, 10 * (m + 1) + i))
                .collect();
            wray::put(&inner)
        })
        .collect();
    println!(
        "deep_refs {}",
        deep_sum_on_accelerator.remote(middle).get()?
    );
    Ok(())
}

/// A running total that says where it lives.
#[wray::actor]
pub struct Tally {
    total: i64,
}

#[wray::actor]
impl Tally {
    /// Starts at `start`; a negative start fails the constructor.
    pub fn new(start: i64) -> Self {
        assert!(start >= 0, "a tally cannot start below 0 (got {start})");
        Tally { total: start }
    }

    /// Adds `n`; the new total.
    pub fn add(&mut self, n: i64) -> i64 {
        self.total += n;
        self.total
    }

    /// The node it lives on.
    pub fn node(&self) -> String {
        wray::node_id()
    }

    /// The id it reads as its own (`current_actor_id`).
    pub fn me(&self) -> Option<wray::ActorId> {
        wray::current_actor_id()
    }
}

/// Adds `n` to `tally` from a node with a relay (a third node): the new
/// total and the node it ran on.
#[wray::remote(resources = {"relay": 1}, num_cpus = 0)]
pub(crate) fn add_from_relay(tally: ActorHandle<Tally>, n: i64) -> wray::Result<(i64, String)> {
    let total = tally.add().remote(n).get()?;
    Ok((total, wray::node_id()))
}

/// A tally made on a node with a relay; its handle is returned.
#[wray::remote(resources = {"relay": 1}, num_cpus = 0)]
pub(crate) fn tally_from_relay(start: i64) -> ActorHandle<Tally> {
    Tally::remote_with(accelerated(), start)
}

/// Options asking for an accelerator.
pub(crate) fn accelerated() -> wray::Options {
    wray::Options::new().resource("accelerator", 1.0)
}

/// `cluster_actors`: an actor created on a node with an accelerator; calls
/// from here in order, from a third node through a passed handle, from
/// here again after it; a failing constructor; a kill.
pub(crate) fn cluster_actors() -> wray::Result<()> {
    let tally = Tally::remote_with(accelerated(), 10i64);
    let adds: Vec<ObjectRef<i64>> = (1..=3i64).map(|n| tally.add().remote(n)).collect();
    println!("adds {:?}", wray::get_all(&adds)?);
    println!("driver_node {}", wray::node_id());
    println!("actor_node {}", tally.node().remote().get()?);
    let (total, relay) = add_from_relay.remote(tally.clone(), 100i64).get()?;
    println!("relayed {total} relay_node {relay}");
    println!("after {}", tally.add().remote(0i64).get()?);
    // Made on node 3, which returned its handle: node 3's own handles are
    // gone once the result is here (give that time to happen), yet the
    // actor lives on for this driver.
    let made: ActorHandle<Tally> = tally_from_relay.remote(5i64).get()?;
    std::thread::sleep(Duration::from_millis(500));
    println!("made {}", made.add().remote(1i64).get()?);
    let broken = Tally::remote_with(accelerated(), -1i64);
    match broken.add().remote(1i64).get() {
        Ok(v) => println!("broken {v}"),
        Err(e) => println!("broken {:?}: {e}", e.kind()),
    }
    println!("killed {}", wray::kill(&tally));
    match tally.add().remote(1i64).get() {
        Ok(v) => println!("after_kill {v}"),
        Err(e) => println!("after_kill {:?}", e.kind()),
    }
    Ok(())
}

/// `cluster_actor_lost`: an actor on a node with an accelerator, called
/// every 100 ms until a call fails (its node is killed): the error.
pub(crate) fn cluster_actor_lost() -> wray::Result<()> {
    let tally = Tally::remote_with(accelerated(), 0i64);
    println!("actor_node {}", tally.node().remote().get()?);
    loop {
        match tally.add().remote(1i64).get() {
            Ok(_) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => {
                println!("lost {:?}: {e}", e.kind());
                return Ok(());
            }
        }
    }
}

/// `cluster_actor_restart`: an actor (starting at 100; one restart, one
/// retry of a lost call) on a node with an accelerator, added to every
/// 100 ms until a total comes back lower than the one before (its node was
/// killed and it restarted from its constructor's state on another node)
/// or a call fails; then where it lives now.
pub(crate) fn cluster_actor_restart() -> wray::Result<()> {
    let options = accelerated().max_restarts(1).max_task_retries(1);
    let tally = Tally::remote_with(options, 100i64);
    println!("actor_node {}", tally.node().remote().get()?);
    let mut last = 100;
    for _ in 0..1200 {
        match tally.add().remote(1i64).get() {
            Ok(total) if total <= last => {
                println!("restarted after {last} total {total}");
                println!("new_node {}", tally.node().remote().get()?);
                println!("next {}", tally.add().remote(1i64).get()?);
                let me = tally.me().remote().get()?;
                println!("same_id_after_restart {}", me == Some(tally.id()));
                return Ok(());
            }
            Ok(total) => last = total,
            Err(e) => {
                println!("lost {:?}: {e}", e.kind());
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("never restarted (last {last})");
    Ok(())
}

/// `cluster_actor_idle_restart SECS`: an actor (starting at 100; one
/// restart, no retry of a lost call) on a node with an accelerator, left
/// alone for SECS seconds (its node is killed meanwhile: it restarts with
/// no call in flight), then added to once: the total and where it lives.
pub(crate) fn cluster_actor_idle_restart(secs: u64) -> wray::Result<()> {
    let tally = Tally::remote_with(accelerated().max_restarts(1), 100i64);
    println!("actor_node {}", tally.node().remote().get()?);
    std::thread::sleep(Duration::from_secs(secs));
    println!("total {}", tally.add().remote(1i64).get()?);
    println!("new_node {}", tally.node().remote().get()?);
    Ok(())
}

/// Adds 1 to `tally` every 100 ms from a node with a relay until a total
/// comes back no higher than the one before (the actor restarted from its
/// constructor's state) or a call fails: (the last total before, the
/// first after; 0 and 0 when it never restarted), or the error.
#[wray::remote(resources = {"relay": 1}, num_cpus = 0)]
pub(crate) fn watch_from_relay(tally: ActorHandle<Tally>) -> wray::Result<(i64, i64)> {
    let mut last = i64::MIN;
    for _ in 0..1200 {
        let total = tally.add().remote(1i64).get()?;
        if total <= last {
            return Ok((last, total));
        }
        last = total;
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((0, 0))
}

/// `cluster_handle_follows_restart`: an actor (starting at 100; one
/// restart, one retry) on a node with an accelerator, called through a
/// handle passed to a task on a relay node (neither its owner nor its
/// node) across the loss of its node; then where it lives.
pub(crate) fn cluster_handle_follows_restart() -> wray::Result<()> {
    let options = accelerated().max_restarts(1).max_task_retries(1);
    let tally = Tally::remote_with(options, 100i64);
    println!("actor_node {}", tally.node().remote().get()?);
    let (before, after) = watch_from_relay.remote(tally.clone()).get()?;
    println!("relay_saw {before} then {after}");
    println!("new_node {}", tally.node().remote().get()?);
    Ok(())
}

/// `cluster_cancel`: a minute-long task on a node with an accelerator,
/// cancelled a second after it was submitted: what `get` says.
pub(crate) fn cluster_cancel() -> wray::Result<()> {
    let slow = slow_on_accelerator.remote(60_000u64, 1u64);
    std::thread::sleep(Duration::from_secs(1));
    println!("cancelled {}", wray::cancel(&slow, false, false));
    match slow.get() {
        Ok(v) => println!("got {v}"),
        Err(e) => println!("cancel_error {:?}", e.kind()),
    }
    Ok(())
}

/// An actor keeping another actor's handle in its state: a holder of that
/// handle on the node it lives on.
#[wray::actor]
pub struct Keeper {
    tally: ActorHandle<Tally>,
}

#[wray::actor]
impl Keeper {
    /// Keeps `tally`.
    pub fn new(tally: ActorHandle<Tally>) -> Self {
        Keeper { tally }
    }

    /// Adds `n` to the kept tally: `ok TOTAL`, or `err KIND` when the call
    /// failed.
    pub fn add(&mut self, n: i64) -> String {
        match self.tally.add().remote(n).get() {
            Ok(total) => format!("ok {total}"),
            Err(e) => format!("err {:?}", e.kind()),
        }
    }
}

/// `cluster_borrowed_actor SECS`: two tallies, one on a node with an
/// accelerator and one here, each kept by a `Keeper` on a node with a
/// relay; this driver drops its handles of the tallies, and the keepers
/// still reach them (another node holds them); then the keepers are
/// killed (no node holds the tallies any more: they exit) and the driver
/// sleeps SECS seconds, so that their exit is seen before its job ends.
pub(crate) fn cluster_borrowed_actor(secs: u64) -> wray::Result<()> {
    let relayed = || wray::Options::new().resource("relay", 1.0);
    let far = Tally::remote_with(accelerated(), 10i64);
    let near = Tally::remote(20i64);
    let keep_far = Keeper::remote_with(relayed(), far.clone());
    let keep_near = Keeper::remote_with(relayed(), near.clone());
    println!("far_node {}", far.node().remote().get()?);
    println!("near_node {}", near.node().remote().get()?);
    let before = (
        keep_far.add().remote(1i64).get()?,
        keep_near.add().remote(1i64).get()?,
    );
    println!("before {} / {}", before.0, before.1);
    drop(far);
    drop(near);
    // Counted per node, the tallies would exit now: give that time.
    std::thread::sleep(Duration::from_millis(500));
    let after = (
        keep_far.add().remote(1i64).get()?,
        keep_near.add().remote(1i64).get()?,
    );
    println!("after {} / {}", after.0, after.1);
    println!(
        "killed {} {}",
        wray::kill(&keep_far),
        wray::kill(&keep_near)
    );
    std::thread::sleep(Duration::from_secs(secs));
    Ok(())
}

/// Leaves a task of `ms` running on this node (a node with an
/// accelerator; its ref dropped) and returns at once: where it ran.
#[wray::remote(resources = {"accelerator": 1})]
pub(crate) fn leave_behind(ms: u64) -> String {
    drop(slow_on_accelerator.remote(ms, 0));
    wray::node_id()
}

/// `cluster_left_behind MS`: a task on a node with an accelerator leaves a
/// task of MS ms running there, and this job ends at once.
pub(crate) fn cluster_left_behind(ms: u64) -> wray::Result<()> {
    println!("left_on {}", leave_behind.remote(ms).get()?);
    Ok(())
}
