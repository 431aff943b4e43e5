//! `wray status`, `wray tasks`, `wray errors` and `wray timeline`: a
//! session's state as `wray run` published it (see `session`), printed like
//! Ray's `ray status`, `ray list tasks` and `ray timeline`. Finished tasks
//! come from the session's task log, pending and running ones from
//! `state.json`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use wray_api::{ErrorInfo, StatusSnapshot, TaskInfo};

use crate::client::NodeArg;
use crate::remote_state::{human_bytes, print_gpus, print_resources, tell_unreachable, AddressArg};
use crate::session::SessionArg;

/// The node's id as `state.json` gives it.
fn node_id(state: &StatusSnapshot) -> &str {
    state.nodes.first().map_or("?", |n| n.node_id.as_str())
}

/// Arguments of `wray status`.
#[derive(Args)]
pub struct StatusArgs {
    /// Session directory of a `wray run` or a `wray start` node (default:
    /// the latest started; `--node` or `--address` name a node instead).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["node_dir", "address"])]
    session: Option<PathBuf>,
    #[command(flatten)]
    node: NodeArg,
}

/// Prints nodes, resources (used / total) and task counts: of the session
/// (a node dead since says so, naming its directory), or over HTTP of the
/// cluster of the node at `--address` (its totals and each node's).
///
/// # Errors
/// No session, or an unreadable `state.json`; the node at `--address`
/// cannot be reached.
pub fn status(args: StatusArgs) -> anyhow::Result<()> {
    if args.node.address_only().is_some() {
        let client = args.node.client()?;
        return crate::remote_state::status(&client);
    }
    let session = match (&args.session, args.node == NodeArg::default()) {
        (Some(dir), _) => SessionArg::at(dir.clone()),
        (None, true) => SessionArg::at(crate::session::latest()),
        (None, false) => SessionArg::at(args.node.local_dir()?),
    };
    let state = session.read("state.json")?;
    let dead = session
        .process()
        .filter(|p| !p.is_alive())
        .map(|p| (p, crate::node_dir::shown(&session.dir())));
    print_status(&state, dead.as_ref().map(|(p, d)| (p.pid, d.as_str())));
    if dead.is_none() {
        if let Some(line) = NodeArg::for_dir(&session.dir())
            .client()
            .ok()
            .and_then(|c| crate::client::control_plane_line(&c))
        {
            println!("Control plane: {line}");
        }
    }
    Ok(())
}

/// Prints a `state.json`; `dead`: the process that published it has
/// ended, and where its state lies.
fn print_status(state: &StatusSnapshot, dead: Option<(u32, &str)>) {
    println!("======== wray status ========");
    println!("Nodes:");
    for n in &state.nodes {
        let shown = match dead {
            None if n.alive => n.state.to_lowercase(),
            None => "dead".to_string(),
            Some(_) => "dead".to_string(),
        };
        match &n.address {
            Some(address) => println!(
                "  {} ({shown}) at {address}, {} tasks running, object store {} of {}",
                n.node_id,
                n.running_tasks,
                human_bytes(n.object_store_used as f64),
                human_bytes(n.object_store_capacity as f64),
            ),
            None => println!("  {} ({shown})", n.node_id),
        }
        print_gpus(&n.gpus);
    }
    if let Some((pid, dir)) = dead {
        println!(
            "  its process {pid} has ended: what follows is the last state it published, in {dir} (stale)"
        );
    }
    println!("Resources (used / total):");
    print_resources(&state.cluster_resources, &state.available_resources);
    println!("Tasks:");
    for (s, n) in &state.task_counts {
        println!("  {s}: {n}");
    }
    println!("Errors: {}", state.errors.len());
}

/// Arguments of `wray tasks`.
#[derive(Args)]
pub struct TasksArgs {
    #[command(flatten)]
    session: SessionArg,
    #[command(flatten)]
    address: AddressArg,
    /// Only tasks in this state (e.g. RUNNING, FAILED, CANCELLED).
    #[arg(long)]
    state: Option<String>,
}

/// Prints the tasks: id, state, function, node, resources, queued and run
/// time: of the session (the finished ones logged, in the order they
/// finished, then the pending and running ones), or with `--address` the
/// cluster's, newest first.
///
/// # Errors
/// No session, or an unreadable `state.json` or task log; the node at
/// `--address` cannot be reached.
pub fn tasks(args: TasksArgs) -> anyhow::Result<()> {
    let all = match args.address.client()? {
        Some(client) => {
            let read = args
                .address
                .rows::<wray_api::TaskList>(&client, "/v1/tasks")?;
            tell_unreachable(&read.unreachable);
            read.rows
        }
        None => session_tasks(&args.session)?,
    };
    let want = args.state.map(|s| s.to_uppercase());
    println!(
        "{:<34}  {:<12}  {:<24}  {:<21}  {:<24}  {:>10}  {:>10}",
        "TASK ID", "STATE", "FUNCTION", "NODE", "RESOURCES", "QUEUED MS", "RUN MS"
    );
    let mut shown = 0;
    for t in &all {
        if want.as_deref().is_some_and(|w| w != t.state) {
            continue;
        }
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |f| format!("{f:.1}"));
        println!(
            "{:<34}  {:<12}  {:<24}  {:<21}  {:<24}  {:>10}  {:>10}",
            t.task_id,
            t.state,
            t.function,
            t.node_id,
            t.resources,
            ms(t.queued_ms),
            ms(t.run_ms),
        );
        shown += 1;
    }
    println!("{shown} tasks");
    Ok(())
}

/// The tasks of a session: the finished ones logged, in the order they
/// finished, then the pending and running ones.
fn session_tasks(session: &SessionArg) -> anyhow::Result<Vec<TaskInfo>> {
    let state: StatusSnapshot = session.read("state.json")?;
    let finished = session.finished_tasks()?;
    let ids: std::collections::HashSet<String> =
        finished.iter().map(|r| r.task_id.clone()).collect();
    let mut all: Vec<TaskInfo> = Vec::with_capacity(finished.len());
    for row in finished {
        // Every logged task has ended: the clock's now is not needed.
        all.push(wray_host::task_info(row, node_id(&state), 0, None));
    }
    all.extend(
        state
            .tasks
            .into_iter()
            .filter(|t| !ids.contains(&t.task_id)),
    );
    Ok(all)
}

/// Arguments of `wray errors`.
#[derive(Args)]
pub struct ErrorsArgs {
    #[command(flatten)]
    session: SessionArg,
    #[command(flatten)]
    address: AddressArg,
}

/// Prints the errors of failed tasks, the root of each cause chain once:
/// function, task, node, kind and message of the root, then the tasks that
/// failed because of it (they passed it on, or an argument held it): of
/// the session, or with `--address` the cluster's (newest first).
///
/// # Errors
/// No session, or an unreadable `state.json`; the node at `--address`
/// cannot be reached.
pub fn errors(args: ErrorsArgs) -> anyhow::Result<()> {
    let all = match args.address.client()? {
        Some(client) => {
            let read = args
                .address
                .rows::<wray_api::ErrorList>(&client, "/v1/errors")?;
            tell_unreachable(&read.unreachable);
            read.rows
        }
        None => {
            let state: StatusSnapshot = args.session.read("state.json")?;
            state.errors
        }
    };
    let groups = group_by_root(&all);
    for group in &groups {
        let root = &group.root;
        println!(
            "{} task {} on {}: {}: {}",
            root.function, root.task_id, group.node, root.kind, root.message,
        );
        if !group.downstream.is_empty() {
            let shown: Vec<String> = group
                .downstream
                .iter()
                .take(SHOWN_DOWNSTREAM)
                .map(|e| format!("{} ({})", e.function, e.task_id))
                .collect();
            let more = group.downstream.len().saturating_sub(SHOWN_DOWNSTREAM);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            println!(
                "  and {} downstream task(s) failed because of it: {}{more}",
                group.downstream.len(),
                shown.join(", "),
            );
        }
    }
    println!("{} errors ({} root causes)", all.len(), groups.len());
    Ok(())
}

/// Downstream tasks named under a root error (the rest are counted).
const SHOWN_DOWNSTREAM: usize = 5;

/// The root of an error's chain: its last cause, or the error itself.
struct Root<'a> {
    task_id: &'a str,
    function: &'a str,
    kind: &'a str,
    message: &'a str,
}

impl<'a> Root<'a> {
    fn of(e: &'a ErrorInfo) -> Self {
        match e.causes.last() {
            Some(c) => Root {
                task_id: &c.task_id,
                function: &c.function,
                kind: &c.kind,
                message: &c.message,
            },
            None => Root {
                task_id: &e.task_id,
                function: &e.function,
                kind: &e.kind,
                message: &e.message,
            },
        }
    }
}

/// The errors of `state.json` that share one root cause.
struct RootGroup<'a> {
    /// The root: the last cause of the chain, or the error itself.
    root: Root<'a>,
    /// The node the first error of the group was seen on.
    node: &'a str,
    /// The failed tasks other than the root's own.
    downstream: Vec<&'a ErrorInfo>,
}

/// `errors` grouped by root cause (the root's task id), in order of first
/// appearance.
fn group_by_root(errors: &[ErrorInfo]) -> Vec<RootGroup<'_>> {
    let mut groups: Vec<RootGroup<'_>> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in errors {
        let root = Root::of(e);
        let own = e.causes.is_empty();
        let at = *index.entry(root.task_id).or_insert_with(|| {
            groups.push(RootGroup {
                root,
                node: &e.node_id,
                downstream: Vec::new(),
            });
            groups.len() - 1
        });
        if !own {
            groups[at].downstream.push(e);
        }
    }
    groups
}

/// Arguments of `wray timeline`.
#[derive(Args)]
pub struct TimelineArgs {
    #[command(flatten)]
    session: SessionArg,
    #[command(flatten)]
    address: AddressArg,
    /// Where to write the trace (default: `wray-timeline-<unix time>.json`
    /// in the temporary directory, as Ray's `ray timeline` does).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Writes the timeline as Chrome trace JSON and says where: of the
/// session's finished tasks, or with `--address` the cluster's (a process
/// per node, a row per worker; `--limit` tasks of each node, `--node-id`
/// one node).
///
/// # Errors
/// No session, an unreadable task log, or the file cannot be written; the
/// node at `--address` cannot be reached.
pub fn timeline(args: TimelineArgs) -> anyhow::Result<()> {
    let out = args.output.unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        std::env::temp_dir().join(format!("wray-timeline-{secs}.json"))
    });
    let events = match args.address.client()? {
        Some(client) => {
            let query = wray_api::TimelineQuery {
                limit: Some(args.address.limit_per_node()),
                node: args.address.node_id().map(str::to_string),
                timeout: None,
            };
            let trace: serde_json::Value = client.typed(
                client
                    .request("GET", &format!("/v1/timeline{}", query.to_query()))
                    .call(),
            )?;
            if let Some(missing) = trace.get("unreachable").cloned() {
                let missing: Vec<wray_api::Unreachable> =
                    serde_json::from_value(missing).unwrap_or_default();
                tell_unreachable(&missing);
            }
            let count = trace["traceEvents"].as_array().map_or(0, Vec::len);
            std::fs::write(&out, serde_json::to_vec(&trace)?)
                .with_context(|| format!("cannot write {}", out.display()))?;
            count
        }
        None => {
            let state: StatusSnapshot = args.session.read("state.json")?;
            let rows = args.session.finished_tasks()?;
            let now = rows.iter().filter_map(|r| r.ended_ns).max().unwrap_or(0);
            std::fs::File::create(&out)
                .and_then(|f| wray_host::write_chrome_trace(&rows, node_id(&state), now, 0.0, f))
                .with_context(|| format!("cannot write {}", out.display()))?
        }
    };
    println!(
        "Trace file written to {} ({events} events); open it in chrome://tracing or https://ui.perfetto.dev",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use wray_api::CauseInfo;

    use super::*;

    fn error(task: &str, function: &str, causes: &[(&str, &str)]) -> ErrorInfo {
        let text = |s: &str| s.to_string();
        ErrorInfo {
            time: 0.0,
            task_id: text(task),
            function: text(function),
            node_id: text("n"),
            kind: text("application"),
            message: text("m"),
            causes: causes
                .iter()
                .map(|(t, f)| CauseInfo {
                    task_id: text(t),
                    function: text(f),
                    kind: text("application"),
                    message: text("m"),
                })
                .collect(),
        }
    }

    #[test]
    fn errors_are_grouped_under_their_root_once() {
        let all = [
            error("a", "fail", &[]),
            // Failed because its argument held a's error; then passed on.
            error("b", "inc", &[("a", "fail")]),
            error("c", "wrap", &[("d", "pass_on"), ("a", "fail")]),
            // Another root, and one whose root was not kept on its own.
            error("e", "other", &[]),
            error("f", "late", &[("g", "gone")]),
        ];
        let groups = group_by_root(&all);
        let shape: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                let down = g.downstream.iter().map(|e| e.task_id.as_str()).collect();
                (g.root.task_id, down)
            })
            .collect();
        assert_eq!(
            shape,
            [("a", vec!["b", "c"]), ("e", vec![]), ("g", vec!["f"])]
        );
    }
}
