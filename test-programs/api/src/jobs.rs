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

/// `job_forever`: makes a `Counter` actor of the job and calls it twice,
/// prints `started`, then waits on a task that sleeps ten minutes (until
/// the job is stopped), the actor's handle held.
pub(crate) fn job_forever() -> wray::Result<()> {
    let counter = crate::actors::Counter::remote(0i64);
    counter.increment().remote().get()?;
    counter.increment().remote().get()?;
    println!("started");
    crate::objects::sleep_ms.remote(600_000).get()?;
    drop(counter);
    println!("never");
    Ok(())
}

/// `VAR=value` (or `VAR unset`), then the first line of `file` (or why it
/// cannot be read), as this instance sees them.
fn env_and_file(var: &str, file: &str) -> String {
    let value = match std::env::var(var) {
        Ok(v) => format!("{var}={v}"),
        Err(_) => format!("{var} unset"),
    };
    let line = match std::fs::read_to_string(file) {
        Ok(text) => text.lines().next().unwrap_or("").to_string(),
        Err(e) => format!("cannot read {file}: {e}"),
    };
    format!("{value}; {line}")
}

/// What a task of the job sees: [`env_and_file`].
#[wray::remote]
pub(crate) fn task_env(var: String, file: String) -> String {
    env_and_file(&var, &file)
}

/// An actor of the job, reading its environment as the job's tasks do.
#[wray::actor]
pub struct EnvReader {}

#[wray::actor(num_cpus = 0)]
impl EnvReader {
    /// Nothing to keep.
    pub fn new() -> Self {
        EnvReader {}
    }

    /// [`env_and_file`] in the actor.
    pub fn read(&self, var: String, file: String) -> String {
        env_and_file(&var, &file)
    }
}

/// `job_env VAR FILE`: prints what the driver, a task and an actor of the
/// job see of variable `VAR` and file `FILE` (`driver VAR=v; line`, ..),
/// then the GPUs the driver holds.
pub(crate) fn job_env(args: &[String]) -> wray::Result<()> {
    let var = args.get(1).cloned().unwrap_or_default();
    let file = args.get(2).cloned().unwrap_or_default();
    println!("driver {}", env_and_file(&var, &file));
    println!("task {}", task_env.remote(var.clone(), file.clone()).get()?);
    let reader = EnvReader::remote();
    println!("actor {}", reader.read().remote(var, file).get()?);
    println!("driver gpus {:?}", wray::get_gpu_ids());
    Ok(())
}
