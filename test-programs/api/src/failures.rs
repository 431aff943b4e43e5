//! Scenarios `errors`, `trap`, `panic`, `oom`, `spin` and `actor_panic`:
//! each failure reaches the driver as an error from `get`, and the driver
//! goes on.

use wray::ObjectRef;

use crate::tasks::inc;

/// Always fails with `msg`.
#[wray::remote]
pub(crate) fn fail(msg: String) -> Result<i64, String> {
    Err(msg)
}

/// Gets `x`, passing its error on with `?` (a cause chain of one).
#[wray::remote]
pub(crate) fn pass_on(x: ObjectRef<i64>) -> wray::Result<i64> {
    x.get()
}

/// An error of this program's own that wraps a task's error as its
/// `source()`.
#[derive(Debug)]
pub(crate) struct Wrapped(wray::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "wrapped: {}", self.0)
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Submits `pass_on(x)` and wraps its error (a chain of two, through
/// `source()`).
#[wray::remote]
pub(crate) fn wrap(x: ObjectRef<i64>) -> Result<i64, Wrapped> {
    pass_on.remote(&x).get().map_err(Wrapped)
}

/// Fails naming an error it never saw as its cause: the node drops it.
#[wray::remote]
pub(crate) fn forge_cause(task: wray::TaskId) -> wray::Result<i64> {
    let never_seen = wray::Error::new(wray::ErrorKind::Timeout, "someone_else", task, "forged");
    Err(wray::Error::new(wray::ErrorKind::Application, "x", task, "claims").caused_by(never_seen))
}

/// Executes `unreachable`.
#[wray::remote]
pub(crate) fn trap_now() -> i64 {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

/// Panics with "oh no".
#[wray::remote]
pub(crate) fn panic_now() -> i64 {
    panic!("oh no")
}

/// Allocates 16 MiB chunks, touching every page, until memory runs out.
#[wray::remote]
pub(crate) fn oom() -> i64 {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; 16 << 20];
        for page in chunk.chunks_mut(4096) {
            page[0] = 1;
        }
        chunks.push(std::hint::black_box(chunk));
    }
}

/// Never returns.
#[wray::remote]
pub(crate) fn spin() -> i64 {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// An actor whose `boom` kills it.
#[wray::actor]
pub struct Fragile {}

#[wray::actor]
impl Fragile {
    /// A fresh actor.
    pub fn new() -> Self {
        Fragile {}
    }

    /// Returns 1.
    pub fn ok(&self) -> i64 {
        1
    }

    /// Panics.
    pub fn boom(&self) -> i64 {
        panic!("boom")
    }
}

/// Prints `{label} {kind}` for an expected failure (or `{label} ok {v}`).
fn print_kind<T: std::fmt::Debug>(label: &str, result: wray::Result<T>) {
    match result {
        Ok(v) => println!("{label} ok {v:?}"),
        Err(e) => println!("{label} {}", e.kind()),
    }
}

/// The driver is still alive: a plain task still runs.
fn after() -> wray::Result<()> {
    println!("after {}", inc.remote(1i64).get()?);
    Ok(())
}

/// `errors`: application errors travel unchanged through dependencies.
pub(crate) fn errors() -> wray::Result<()> {
    let failed = fail.remote("boom");
    let once = inc.remote(&failed);
    let twice = inc.remote(&once);
    let first = failed.get();
    let last = twice.get();
    for result in [&first, &last] {
        match result {
            Ok(v) => println!("ok {v}"),
            Err(e) => println!("error {} {} {}", e.kind(), e.function(), e.message()),
        }
    }
    let same = matches!((&first, &last), (Err(a), Err(b)) if a.task() == b.task());
    println!("same_task {same}");

    let ids = wray::__private::submit_raw("nope", Vec::new(), 1);
    match ids.first() {
        Some(id) => match ObjectRef::<i64>::from_id(*id).get() {
            Ok(v) => println!("ok {v}"),
            Err(e) => println!("error {} {} {}", e.kind(), e.function(), e.message()),
        },
        None => println!("error none"),
    }

    // A chain: wrap -> pass_on -> fail, each passing the error on.
    let wrapped = wrap.remote(&failed).get();
    if let Err(e) = &wrapped {
        let root = e.root();
        println!("chain {} {} {}", e.kind(), e.function(), e.causes().len());
        println!(
            "root {} {} {}",
            root.kind(),
            root.function(),
            root.message()
        );
        println!(
            "root_task {}",
            Some(root.task()) == first.as_ref().err().map(wray::Error::task)
        );
    }
    let forged = forge_cause.remote(failed.id().task).get();
    if let Err(e) = &forged {
        println!("forged {} {}", e.function(), e.causes().len());
    }
    Ok(())
}

/// `trap`: a trap fails the task with kind `trap`.
pub(crate) fn trap() -> wray::Result<()> {
    print_kind("trap", trap_now.remote().get());
    after()
}

/// `panic`: a panic fails the task with kind `panic` and its message.
pub(crate) fn panic() -> wray::Result<()> {
    match panic_now.remote().get() {
        Ok(v) => println!("panic ok {v}"),
        Err(e) => println!("panic {} {}", e.kind(), e.message().contains("oh no")),
    }
    after()
}

/// `oom`: growing past the memory limit fails with kind `out-of-memory`.
pub(crate) fn oom_scenario() -> wray::Result<()> {
    print_kind("oom", oom.remote().get());
    after()
}

/// `spin`: running past the time limit fails with kind `timeout`.
pub(crate) fn spin_scenario() -> wray::Result<()> {
    print_kind("spin", spin.remote().get());
    after()
}

/// `cluster_limits`: `spin` and `oom` on the node with an accelerator
/// (another node of a cluster): that node's time and memory limits stop
/// them, with their kinds (`timeout`, `out-of-memory`).
pub(crate) fn cluster_limits() -> wray::Result<()> {
    print_kind(
        "spin",
        spin.options(crate::cluster::accelerated()).remote().get(),
    );
    print_kind(
        "oom",
        oom.options(crate::cluster::accelerated()).remote().get(),
    );
    after()
}

/// `actor_panic`: a panicking method kills its actor.
pub(crate) fn actor_panic() -> wray::Result<()> {
    let f = Fragile::remote();
    match f.ok().remote().get() {
        Ok(v) => println!("ok {v}"),
        Err(e) => println!("ok {}", e.kind()),
    }
    print_kind("boom", f.boom().remote().get());
    print_kind("dead", f.ok().remote().get());
    Ok(())
}
