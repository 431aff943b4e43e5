//! Scenarios run as background jobs (the host's `Jobs`): what they print
//! lands in the job's own log.

/// Prints `task TAG` to stdout and `task TAG stderr` to stderr; returns
/// the tag's length.
#[wray::remote]
pub(crate) fn shout(tag: String) -> u64 {
    println!("task {tag}");
    eprintln!("task {tag} stderr");
    tag.len() as u64
}

/// `job_output TAG N`: `N` lines `driver TAG i` on stdout, one on stderr,
/// then a task of the job prints its own, then `done TAG`.
pub(crate) fn job_output(args: &[String]) -> wray::Result<()> {
    let tag = args.get(1).cloned().unwrap_or_default();
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    for i in 0..n {
        println!("driver {tag} {i}");
    }
    eprintln!("driver {tag} stderr");
    let len = shout.remote(tag.clone()).get()?;
    println!("done {tag} {len}");
    Ok(())
}

/// `job_forever`: prints `started`, then waits on a task that sleeps ten
/// minutes (until the job is stopped).
pub(crate) fn job_forever() -> wray::Result<()> {
    println!("started");
    crate::objects::sleep_ms.remote(600_000).get()?;
    println!("never");
    Ok(())
}
