//! The cases of `ray microbenchmark` (python/ray/_private/ray_perf.py), one
//! function each, with Ray's names, counts and multipliers.
//!
//! Ray's values become Rust values of the same size: `0` is an `i64`,
//! `b"ok"` a `Vec<u8>`, `np.zeros(k, dtype=np.int64)` a `vec![0i64; k]`.
//! Ray's `Actor` class is [`Server`] here (the SDK has an `Actor` trait);
//! Ray's `Client` is [`Client`]. Ray's actors take 0 CPUs, as wray's do.
//!
//! Left out: the async-actor cases (wray actors are synchronous), the
//! object out-of-scope callback cases (no such host call), placement groups
//! and the Ray Client cases.

use wray::{ActorHandle, ObjectRef};

use crate::suite::{err, Ctx, RAY_GB};
use wray_timeit::{timeit, Stat};

/// Ray's `small_value`: the trivial task.
#[wray::remote]
pub fn small_value() -> Vec<u8> {
    b"ok".to_vec()
}

/// Ray's `do_put_small`: 100 puts of a small value.
#[wray::remote]
pub fn do_put_small() {
    for _ in 0..100 {
        wray::put(&0i64);
    }
}

/// Ray's `do_put`: 10 puts of 80 MiB (`np.zeros(10 * 1024 * 1024, int64)`),
/// each a fresh array.
#[wray::remote]
pub fn do_put() {
    for _ in 0..10 {
        wray::put(&vec![0i64; 10 * 1024 * 1024]);
    }
}

/// Ray's `create_object_containing_ref`: 10,000 puts, returned as one list
/// of refs.
#[wray::remote]
pub fn create_object_containing_ref() -> Vec<ObjectRef<i64>> {
    (0..10_000).map(|_| wray::put(&1i64)).collect()
}

/// Ray's `work` (in "n:n actor calls async"): `n` calls spread round-robin
/// over `actors`, then one `get` of all of them.
#[wray::remote]
pub fn work(actors: Vec<ActorHandle<Server>>, n: u64) -> wray::Result<()> {
    let refs: Vec<ObjectRef<Vec<u8>>> = (0..n as usize)
        .map(|i| actors[i % actors.len()].small_value().remote())
        .collect();
    wray::get_all(&refs).map(drop)
}

/// Ray's `Actor`: an actor whose methods do (almost) nothing.
#[wray::actor]
pub struct Server;

#[wray::actor]
impl Server {
    /// A new server.
    pub fn new() -> Self {
        Server
    }

    /// Returns `b"ok"`.
    pub fn small_value(&self) -> Vec<u8> {
        b"ok".to_vec()
    }

    /// Returns `b"ok"`, ignoring its argument.
    pub fn small_value_arg(&self, _x: i64) -> Vec<u8> {
        b"ok".to_vec()
    }

    /// Submits `n` [`small_value`] tasks and gets them all.
    pub fn small_value_batch(&self, n: u64) -> wray::Result<()> {
        let refs: Vec<ObjectRef<Vec<u8>>> = (0..n).map(|_| small_value.remote()).collect();
        wray::get_all(&refs).map(drop)
    }
}

/// Ray's `Client`: calls its servers.
#[wray::actor]
pub struct Client {
    servers: Vec<ActorHandle<Server>>,
}

#[wray::actor]
impl Client {
    /// A client of `servers`.
    pub fn new(servers: Vec<ActorHandle<Server>>) -> Self {
        Client { servers }
    }

    /// `n` calls of `small_value` on each server, then one `get` of all.
    pub fn small_value_batch(&self, n: u64) -> wray::Result<()> {
        let mut refs: Vec<ObjectRef<Vec<u8>>> = Vec::new();
        for s in &self.servers {
            refs.extend((0..n).map(|_| s.small_value().remote()));
        }
        wray::get_all(&refs).map(drop)
    }

    /// Puts `0`, then `n` calls of `small_value_arg(that ref)` on each
    /// server, then one `get` of all.
    pub fn small_value_batch_arg(&self, n: u64) -> wray::Result<()> {
        let x = wray::put(&0i64);
        let mut refs: Vec<ObjectRef<Vec<u8>>> = Vec::new();
        for s in &self.servers {
            refs.extend((0..n).map(|_| s.small_value_arg().remote(&x)));
        }
        wray::get_all(&refs).map(drop)
    }
}

/// `n` small values from a task or actor call, fetched with one `get`.
fn get_all(refs: &[ObjectRef<Vec<u8>>]) -> Result<(), String> {
    wray::get_all(refs).map(drop).map_err(err)
}

/// "single client get calls (Plasma Store)"
pub fn get_calls(cx: &Ctx) -> Result<Stat, String> {
    let value = wray::put(&0i64);
    Ok(timeit(cx.scale, || value.get().map(drop).map_err(err))?.rate(1.0))
}

/// "single client put calls (Plasma Store)"
pub fn put_calls(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        wray::put(&0i64);
        Ok::<(), String>(())
    })?
    .rate(1.0))
}

/// "multi client put calls (Plasma Store)": 10 tasks of 100 puts each.
pub fn multi_put_calls(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        let refs: Vec<ObjectRef<()>> = (0..10).map(|_| do_put_small.remote()).collect();
        wray::get_all(&refs).map(drop).map_err(err)
    })?
    .rate(1000.0))
}

/// "single client put gigabytes": puts of one 800 MiB array.
pub fn put_gigabytes(cx: &Ctx) -> Result<Stat, String> {
    const LEN: usize = 100 * 1024 * 1024;
    let arr = vec![0i64; LEN];
    let gb = (LEN * 8) as f64 / RAY_GB; // Ray's 8 * 0.1
    Ok(timeit(cx.scale, || {
        wray::put(&arr);
        Ok::<(), String>(())
    })?
    .rate(gb))
}

/// "single client tasks and get batch": 1,000 tasks, one `get` (Ray counts
/// the batch as one).
pub fn tasks_and_get_batch(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = (0..1000).map(|_| small_value.remote()).collect();
        get_all(&refs)
    })?
    .rate(1.0))
}

/// "multi client put gigabytes": 10 tasks of 10 puts of 80 MiB each.
pub fn multi_put_gigabytes(cx: &Ctx) -> Result<Stat, String> {
    let gb = (10 * 10 * 10 * 1024 * 1024 * 8u64) as f64 / RAY_GB; // Ray's 10 * 8 * 0.1
    Ok(timeit(cx.scale, || {
        let refs: Vec<ObjectRef<()>> = (0..10).map(|_| do_put.remote()).collect();
        wray::get_all(&refs).map(drop).map_err(err)
    })?
    .rate(gb))
}

/// "single client get object containing 10k refs"
pub fn get_containing_refs(cx: &Ctx) -> Result<Stat, String> {
    let obj = create_object_containing_ref.remote();
    Ok(timeit(cx.scale, || obj.get().map(drop).map_err(err))?.rate(1.0))
}

/// "single client wait 1k refs": 1,000 tasks, then 1,000 `wait`s for one
/// more of them.
pub fn wait_1k_refs(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        let mut not_ready: Vec<_> = (0..1000).map(|_| small_value.remote()).collect();
        for _ in 0..1000 {
            let (_ready, rest) = wray::wait(&not_ready, 1, None);
            not_ready = rest;
        }
        Ok::<(), String>(())
    })?
    .rate(1.0))
}

/// "single client tasks sync": one task, then its `get`.
pub fn tasks_sync(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        small_value.remote().get().map(drop).map_err(err)
    })?
    .rate(1.0))
}

/// "single client tasks async": 1,000 tasks, one `get`.
pub fn tasks_async(cx: &Ctx) -> Result<Stat, String> {
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = (0..1000).map(|_| small_value.remote()).collect();
        get_all(&refs)
    })?
    .rate(1000.0))
}

/// "multi client tasks async": 4 actors each submit 10,000 tasks and get
/// them.
pub fn multi_tasks_async(cx: &Ctx) -> Result<Stat, String> {
    let (n, m) = (10_000u64, 4);
    let actors: Vec<ActorHandle<Server>> = (0..m).map(|_| Server::remote()).collect();
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = actors
            .iter()
            .map(|a| a.small_value_batch().remote(n))
            .collect();
        wray::get_all(&refs).map(drop).map_err(err)
    })?
    .rate((n * m) as f64))
}

/// "1:1 actor calls sync": one call, then its `get`.
pub fn actor_sync(cx: &Ctx) -> Result<Stat, String> {
    let a = Server::remote();
    Ok(timeit(cx.scale, || {
        a.small_value().remote().get().map(drop).map_err(err)
    })?
    .rate(1.0))
}

/// "1:1 actor calls async": 1,000 calls on one actor, one `get`.
pub fn actor_async(cx: &Ctx) -> Result<Stat, String> {
    let a = Server::remote();
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = (0..1000).map(|_| a.small_value().remote()).collect();
        get_all(&refs)
    })?
    .rate(1000.0))
}

/// "1:1 actor calls concurrent": Ray's actor here has `max_concurrency=16`;
/// wray actors run their calls one at a time, so this runs exactly like
/// "1:1 actor calls async" (on a fresh actor, as in Ray).
pub fn actor_concurrent(cx: &Ctx) -> Result<Stat, String> {
    actor_async(cx)
}

/// "1:n actor calls async": one client actor calls `cores / 2` servers
/// 5,000 times each.
pub fn one_to_n_actor_async(cx: &Ctx) -> Result<Stat, String> {
    let n = 5000u64;
    let actors: Vec<ActorHandle<Server>> = (0..cx.half_cores()).map(|_| Server::remote()).collect();
    let calls = n * actors.len() as u64;
    let client = Client::remote(actors);
    Ok(timeit(cx.scale, || {
        client.small_value_batch().remote(n).get().map_err(err)
    })?
    .rate(calls as f64))
}

/// "n:n actor calls async": 4 tasks each make 5,000 calls spread over
/// `cores / 2` actors.
pub fn n_to_n_actor_async(cx: &Ctx) -> Result<Stat, String> {
    let (n, m) = (5000u64, 4u64);
    let actors: Vec<ActorHandle<Server>> = (0..cx.half_cores()).map(|_| Server::remote()).collect();
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = (0..m).map(|_| work.remote(actors.clone(), n)).collect();
        wray::get_all(&refs).map(drop).map_err(err)
    })?
    .rate((m * n) as f64))
}

/// "n:n actor calls with arg async": `cores / 2` clients, each with its own
/// server, make 1,000 calls with an object argument.
pub fn n_to_n_actor_with_arg(cx: &Ctx) -> Result<Stat, String> {
    let n = 1000u64;
    let clients: Vec<ActorHandle<Client>> = (0..cx.half_cores())
        .map(|_| Client::remote(vec![Server::remote()]))
        .collect();
    Ok(timeit(cx.scale, || {
        let refs: Vec<_> = clients
            .iter()
            .map(|c| c.small_value_batch_arg().remote(n))
            .collect();
        wray::get_all(&refs).map(drop).map_err(err)
    })?
    .rate((n * clients.len() as u64) as f64))
}
