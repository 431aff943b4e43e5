//! `wray status`, `wray tasks`, `wray errors` and `wray timeline`: a
//! session's state as `wray run` published it (see `session`), printed like
//! Ray's `ray status`, `ray list tasks` and `ray timeline`. Finished tasks
//! come from the session's task log, pending and running ones from
//! `state.json`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::Value;

use crate::client::{Client, NodeArg};
use crate::session::SessionArg;

/// The node's id as `state.json` gives it.
fn node_id(state: &Value) -> &str {
    state["nodes"][0]["node_id"].as_str().unwrap_or("?")
}

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 => format!("{f:.0}"),
        Some(f) => format!("{f}"),
        None => "?".into(),
    }
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
/// node at `--address`.
///
/// # Errors
/// No session, or an unreadable `state.json`; the node at `--address`
/// cannot be reached.
pub fn status(args: StatusArgs) -> anyhow::Result<()> {
    if args.node.address_only().is_some() {
        let client = args.node.client()?;
        let state = remote_state(&client)?;
        print_status(&state, None);
        if let Some(line) = crate::client::control_plane_line(&client) {
            println!("Control plane: {line}");
        }
        return Ok(());
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

/// A node's state as `state.json` has it, read over HTTP: `/v1/nodes`,
/// `/v1/resources`, `/v1/errors` and the task counts of `/metrics`.
fn remote_state(client: &Client) -> anyhow::Result<Value> {
    let get = |path: &str| -> anyhow::Result<String> {
        client.answer(client.request("GET", path).call())
    };
    let nodes: Value = serde_json::from_str(&get("/v1/nodes")?)?;
    let resources: Value = serde_json::from_str(&get("/v1/resources")?)?;
    // Every page of the errors (the node keeps a bounded ring of them).
    let mut errors = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => format!("/v1/errors?limit={}", wray_api::MAX_LIMIT),
            Some(a) => format!(
                "/v1/errors?limit={}&after={}",
                wray_api::MAX_LIMIT,
                wray_api::encode(a)
            ),
        };
        let page: wray_api::ErrorList = serde_json::from_str(&get(&path)?)?;
        errors.extend(page.errors.into_iter().map(serde_json::to_value));
        match page.next {
            Some(next) if after.as_deref() != Some(next.as_str()) => after = Some(next),
            _ => break,
        }
    }
    let errors = errors.into_iter().collect::<Result<Vec<Value>, _>>()?;
    let mut counts = serde_json::Map::new();
    for line in get("/metrics")?.lines() {
        // wray_tasks{state="FINISHED"} 3
        let Some(rest) = line.strip_prefix("wray_tasks{state=\"") else {
            continue;
        };
        if let Some((state, n)) = rest.split_once("\"} ") {
            if let Ok(n) = n.trim().parse::<u64>() {
                counts.insert(state.to_string(), n.into());
            }
        }
    }
    Ok(serde_json::json!({
        "nodes": nodes,
        "cluster_resources": resources["total"],
        "available_resources": resources["available"],
        "task_counts": counts,
        "errors": errors,
    }))
}

/// Prints a `state.json`; `dead`: the process that published it has
/// ended, and where its state lies.
fn print_status(state: &Value, dead: Option<(u32, &str)>) {
    println!("======== wray status ========");
    println!("Nodes:");
    for n in state["nodes"].as_array().into_iter().flatten() {
        let alive = if dead.is_none() && n["alive"].as_bool() == Some(true) {
            "alive"
        } else {
            "dead"
        };
        let state = match (dead, n["state"].as_str()) {
            (None, Some(s)) => s.to_lowercase(),
            _ => alive.to_string(),
        };
        match n["address"].as_str() {
            Some(address) => println!(
                "  {} ({state}) at {address}, {} tasks running, {} of {} store bytes",
                n["node_id"].as_str().unwrap_or("?"),
                num(&n["running_tasks"]),
                num(&n["object_store_used"]),
                num(&n["object_store_capacity"]),
            ),
            None => println!("  {} ({state})", n["node_id"].as_str().unwrap_or("?")),
        }
        for g in n["gpus"].as_array().into_iter().flatten() {
            println!(
                "    GPU {}: {} ({} MiB)",
                num(&g["index"]),
                g["name"].as_str().unwrap_or("?"),
                g["memory"].as_u64().unwrap_or(0) >> 20
            );
        }
    }
    if let Some((pid, dir)) = dead {
        println!(
            "  its process {pid} has ended: what follows is the last state it published, in {dir} (stale)"
        );
    }
    println!("Resources (used / total):");
    for (name, t) in state["cluster_resources"].as_object().into_iter().flatten() {
        let free = state["available_resources"][name].as_f64().unwrap_or(0.0);
        let used = t.as_f64().unwrap_or(0.0) - free;
        println!("  {name}: {} / {}", num(&Value::from(used)), num(t));
    }
    println!("Tasks:");
    for (s, n) in state["task_counts"].as_object().into_iter().flatten() {
        println!("  {s}: {}", num(n));
    }
    println!("Errors: {}", state["errors"].as_array().map_or(0, Vec::len));
}

/// Arguments of `wray tasks`.
#[derive(Args)]
pub struct TasksArgs {
    #[command(flatten)]
    session: SessionArg,
    /// Only tasks in this state (e.g. RUNNING, FAILED, CANCELLED).
    #[arg(long)]
    state: Option<String>,
}

/// Prints the tasks: id, state, function, resources, queued and run time
/// (the finished ones logged, in the order they finished, then the pending
/// and running ones).
///
/// # Errors
/// No session, or an unreadable `state.json` or task log.
pub fn tasks(args: TasksArgs) -> anyhow::Result<()> {
    let state = args.session.read("state.json")?;
    let finished = args.session.finished_tasks()?;
    let ids: std::collections::HashSet<String> =
        finished.iter().map(|r| r.task_id.clone()).collect();
    let mut all = Vec::with_capacity(finished.len());
    for row in finished {
        // Every logged task has ended: the clock's now is not needed.
        let info = wray_host::node::state::task_info(row, node_id(&state), 0);
        all.push(serde_json::to_value(info)?);
    }
    let live = state["tasks"].as_array().into_iter().flatten();
    all.extend(
        live.filter(|t| !ids.contains(t["task_id"].as_str().unwrap_or("?")))
            .cloned(),
    );
    let want = args.state.map(|s| s.to_uppercase());
    println!(
        "{:<34}  {:<12}  {:<24}  {:<24}  {:>10}  {:>10}",
        "TASK ID", "STATE", "FUNCTION", "RESOURCES", "QUEUED MS", "RUN MS"
    );
    let mut shown = 0;
    for t in &all {
        let s = t["state"].as_str().unwrap_or("?");
        if want.as_deref().is_some_and(|w| w != s) {
            continue;
        }
        let ms = |v: &Value| v.as_f64().map_or("-".to_string(), |f| format!("{f:.1}"));
        println!(
            "{:<34}  {:<12}  {:<24}  {:<24}  {:>10}  {:>10}",
            t["task_id"].as_str().unwrap_or("?"),
            s,
            t["function"].as_str().unwrap_or("?"),
            t["resources"].as_str().unwrap_or("?"),
            ms(&t["queued_ms"]),
            ms(&t["run_ms"]),
        );
        shown += 1;
    }
    println!("{shown} tasks");
    Ok(())
}

/// Prints the errors of failed tasks, the root of each cause chain once:
/// function, task, node, kind and message of the root, then the tasks that
/// failed because of it (they passed it on, or an argument held it).
///
/// # Errors
/// No session, or an unreadable `state.json`.
pub fn errors(args: SessionArg) -> anyhow::Result<()> {
    let state = args.read("state.json")?;
    let all = state["errors"].as_array().cloned().unwrap_or_default();
    let groups = group_by_root(&all);
    for group in &groups {
        let root = group.root;
        println!(
            "{} task {} on {}: {}: {}",
            text(&root["function"]),
            text(&root["task_id"]),
            group.node,
            text(&root["kind"]),
            text(&root["message"]),
        );
        if !group.downstream.is_empty() {
            let shown: Vec<String> = group
                .downstream
                .iter()
                .take(SHOWN_DOWNSTREAM)
                .map(|e| format!("{} ({})", text(&e["function"]), text(&e["task_id"])))
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

/// The errors of `state.json` that share one root cause.
struct RootGroup<'a> {
    /// The root: the last cause of the chain, or the error itself.
    root: &'a serde_json::Value,
    /// The node the first error of the group was seen on.
    node: &'a str,
    /// The failed tasks other than the root's own.
    downstream: Vec<&'a serde_json::Value>,
}

/// `errors` grouped by root cause (the root's task id), in order of first
/// appearance.
fn group_by_root(errors: &[serde_json::Value]) -> Vec<RootGroup<'_>> {
    let mut groups: Vec<RootGroup<'_>> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in errors {
        let root = e["causes"].as_array().and_then(|c| c.last()).unwrap_or(e);
        let key = text(&root["task_id"]);
        let own = std::ptr::eq(root, e);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push(RootGroup {
                root,
                node: text(&e["node_id"]),
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

/// A JSON string, or `?`.
fn text(v: &serde_json::Value) -> &str {
    v.as_str().unwrap_or("?")
}

/// Arguments of `wray timeline`.
#[derive(Args)]
pub struct TimelineArgs {
    #[command(flatten)]
    session: SessionArg,
    /// Where to write the trace (default: `wray-timeline-<unix time>.json`
    /// in the temporary directory, as Ray's `ray timeline` does).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Writes the timeline of the session's finished tasks as Chrome trace
/// JSON and says where.
///
/// # Errors
/// No session, an unreadable task log, or the file cannot be written.
pub fn timeline(args: TimelineArgs) -> anyhow::Result<()> {
    let state = args.session.read("state.json")?;
    let rows = args.session.finished_tasks()?;
    let out = args.output.unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        std::env::temp_dir().join(format!("wray-timeline-{secs}.json"))
    });
    let now = rows.iter().filter_map(|r| r.ended_ns).max().unwrap_or(0);
    let events = std::fs::File::create(&out)
        .and_then(|f| wray_host::node::timeline::write_chrome_trace(&rows, node_id(&state), now, f))
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!(
        "Trace file written to {} ({events} events); open it in chrome://tracing or https://ui.perfetto.dev",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(task: &str, function: &str, causes: &[(&str, &str)]) -> serde_json::Value {
        let causes: Vec<_> = causes
            .iter()
            .map(|(t, f)| json!({"task_id": t, "function": f, "kind": "application", "message": "m"}))
            .collect();
        json!({"task_id": task, "function": function, "node_id": "n", "kind": "application",
               "message": "m", "causes": causes})
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
                let down = g.downstream.iter().map(|e| text(&e["task_id"])).collect();
                (text(&g.root["task_id"]), down)
            })
            .collect();
        assert_eq!(
            shape,
            [("a", vec!["b", "c"]), ("e", vec![]), ("g", vec!["f"])]
        );
    }
}
