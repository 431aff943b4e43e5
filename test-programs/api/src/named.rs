//! Scenarios `named`, `named_make`, `named_use`, `named_kill`: named actors
//! (Ray's `name=` and `get_actor`), within a job and across jobs.

use wray::{ActorHandle, Options};

use crate::actors::{Counter, Log};

/// Increments the counter named `name`, found by name in this task.
#[wray::remote]
pub(crate) fn use_named(name: String) -> wray::Result<i64> {
    let counter: ActorHandle<Counter> = wray::get_actor(&name)?;
    counter.increment().remote().get()
}

/// What a `get_actor` of class `A` named `name` gives: `ok` or the error's
/// kind.
fn found<A: wray::Actor>(name: &str) -> String {
    match wray::get_actor::<A>(name) {
        Ok(_) => "ok".to_string(),
        Err(e) => e.kind().to_string(),
    }
}

/// `named`: a named counter is found by name from another task; a second
/// actor asking its name dies naming the holder; unknown names and the
/// wrong class are errors; a killed actor's name is free again.
pub(crate) fn named() -> wray::Result<()> {
    let name = "named-counter";
    let c = Counter::remote_with(Options::new().name(name), 10i64);
    println!("named {}", c.increment().remote().get()?);
    println!("from_task {}", use_named.remote(name.to_string()).get()?);
    let dup = Counter::remote_with(Options::new().name(name), 0i64);
    match dup.increment().remote().get() {
        Ok(v) => println!("dup ok {v}"),
        Err(e) => println!(
            "dup {} names_holder={}",
            e.kind(),
            e.to_string().contains(&c.id().to_string())
        ),
    }
    println!("nobody {}", found::<Counter>("nobody"));
    println!("class {}", found::<Log>(name));
    println!("bad_name {}", found::<Counter>("a/b"));
    wray::kill(&c);
    println!("killed {}", found::<Counter>(name));
    let again = Counter::remote_with(Options::new().name(name), 100i64);
    println!("again {}", again.increment().remote().get()?);
    Ok(())
}

/// `named_make NAME START`: a detached counter named NAME starting at
/// START, incremented once (or the error's kind); it outlives this job.
pub(crate) fn named_make(name: &str, start: i64) -> wray::Result<()> {
    let c = Counter::remote_with(Options::new().name(name).detached(), start);
    match c.increment().remote().get() {
        Ok(n) => println!("named_make {n}"),
        Err(e) => println!("named_make {}", e.kind()),
    }
    Ok(())
}

/// `named_use NAME`: increments the counter named NAME (made by another
/// job, perhaps on another node); or the error's kind.
pub(crate) fn named_use(name: &str) -> wray::Result<()> {
    let used = wray::get_actor::<Counter>(name).and_then(|c| c.increment().remote().get());
    match used {
        Ok(n) => println!("named_use {n}"),
        Err(e) => println!("named_use {}", e.kind()),
    }
    Ok(())
}

/// `named_kill NAME`: kills the counter named NAME.
pub(crate) fn named_kill(name: &str) -> wray::Result<()> {
    let c = wray::get_actor::<Counter>(name)?;
    println!("named_kill {}", wray::kill(&c));
    Ok(())
}
