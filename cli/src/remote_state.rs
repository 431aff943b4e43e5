//! The cluster's state read over a node's HTTP API (`--address URL`, the
//! token from `WRAY_TOKEN`): `wray status`, `tasks`, `errors`, `objects`,
//! `timeline` and `job list` see every node of the cluster through any one
//! of them. Listings are read a page at a time ([`rows`]), newest first,
//! up to `--limit` rows; a node that did not answer in time is named
//! ([`tell_unreachable`]) rather than waited for.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::de::DeserializeOwned;
use wray_api::{
    ActorList, ClusterListQuery, ErrorList, JobList, ObjectList, Order, TaskList, Unreachable,
    MAX_LIMIT,
};

use crate::client::{Client, NodeArg};

/// The most rows a command reads (`--limit`).
pub const MAX_ROWS: usize = 100_000;

/// The most errors `wray status --address` counts (past it: `10000+`).
const COUNTED_ERRORS: usize = 10_000;

/// `--address` for the commands that otherwise read a session directory.
#[derive(Args, Debug, Clone, Default)]
pub struct AddressArg {
    /// Read the cluster through the node at this URL, over its HTTP API
    /// (its token from `WRAY_TOKEN`), rather than a session directory: every
    /// node's rows.
    #[arg(long, value_name = "URL", conflicts_with_all = ["session", "node"])]
    address: Option<String>,
    /// With `--address` at https: trust this certificate (PEM) instead of
    /// the public roots (default: `WRAY_CACERT`).
    #[arg(long, value_name = "FILE", requires = "address")]
    cacert: Option<PathBuf>,
    /// With `--address`: only the rows of this node (its id).
    #[arg(long = "node-id", value_name = "ID", requires = "address")]
    node_id: Option<String>,
    /// With `--address`: the most rows to read (1 to 100000), newest first.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "address",
          value_parser = clap::value_parser!(u64).range(1..=MAX_ROWS as u64))]
    limit: u64,
    /// With `--address`: the oldest first.
    #[arg(long, requires = "address")]
    oldest: bool,
}

impl AddressArg {
    /// The client of `--address`, when given.
    ///
    /// # Errors
    /// Its certificate cannot be read.
    pub(crate) fn client(&self) -> anyhow::Result<Option<Client>> {
        self.address
            .as_ref()
            .map(|url| NodeArg::at(url.clone(), self.cacert.clone()).client())
            .transpose()
    }

    /// The node `--node-id` names.
    pub fn node_id(&self) -> Option<&str> {
        self.node_id.as_deref()
    }

    /// `--limit` as the timeline's tasks of each node.
    pub fn limit_per_node(&self) -> usize {
        usize::try_from(self.limit)
            .unwrap_or(MAX_ROWS)
            .min(wray_api::MAX_TIMELINE_TASKS)
    }

    /// Every row of the listing at `path` this asks for (`--node-id`,
    /// `--limit`, `--oldest`).
    ///
    /// # Errors
    /// The node cannot be reached, or answers an error.
    pub(crate) fn rows<L: Paged>(
        &self,
        client: &Client,
        path: &str,
    ) -> anyhow::Result<Rows<L::Row>> {
        let order = if self.oldest {
            Order::Oldest
        } else {
            Order::Newest
        };
        let max = usize::try_from(self.limit).unwrap_or(MAX_ROWS);
        rows::<L>(client, path, self.node_id.as_deref(), order, max)
    }
}

/// A listing's page, as [`rows`] reads it.
pub trait Paged: DeserializeOwned {
    /// Its rows' type.
    type Row;
    /// Its rows, cursor and unreachable nodes.
    fn parts(self) -> (Vec<Self::Row>, Option<String>, Vec<Unreachable>);
}

macro_rules! paged {
    ($list:ty, $row:ty, $field:ident) => {
        impl Paged for $list {
            type Row = $row;
            fn parts(self) -> (Vec<$row>, Option<String>, Vec<Unreachable>) {
                (self.$field, self.next, self.unreachable)
            }
        }
    };
}

paged!(TaskList, wray_api::TaskInfo, tasks);
paged!(ErrorList, wray_api::ErrorInfo, errors);
paged!(ObjectList, wray_api::ObjectInfo, objects);
paged!(JobList, wray_api::JobInfo, jobs);
paged!(ActorList, wray_api::ActorState, actors);

/// What [`rows`] read.
pub struct Rows<T> {
    /// The rows, in the listing's order.
    pub rows: Vec<T>,
    /// The nodes whose rows are missing (each once).
    pub unreachable: Vec<Unreachable>,
    /// Whether there were more rows than read.
    pub more: bool,
}

/// The rows of the cluster listing at `path` (`/v1/tasks`), page after
/// page, at most `max`, of node `node` only when given, in `order`.
///
/// # Errors
/// The node cannot be reached, or answers an error.
pub(crate) fn rows<L: Paged>(
    client: &Client,
    path: &str,
    node: Option<&str>,
    order: Order,
    max: usize,
) -> anyhow::Result<Rows<L::Row>> {
    let mut out = Rows {
        rows: Vec::new(),
        unreachable: Vec::new(),
        more: false,
    };
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let want = max.saturating_sub(out.rows.len()).min(MAX_LIMIT);
        if want == 0 {
            out.more = after.is_some();
            break;
        }
        let query = ClusterListQuery {
            limit: Some(want),
            after: after.clone(),
            order: Some(order),
            node: node.map(str::to_string),
            timeout: None,
        };
        let page: L = client.typed(
            client
                .request("GET", &format!("{path}{}", query.to_query()))
                .call(),
        )?;
        let (rows, next, unreachable) = page.parts();
        out.rows.extend(rows);
        for u in unreachable {
            seen.entry(u.node_id).or_insert(u.error);
        }
        match next {
            Some(next) if after.as_deref() != Some(next.as_str()) => after = Some(next),
            _ => break,
        }
    }
    out.unreachable = seen
        .into_iter()
        .map(|(node_id, error)| Unreachable { node_id, error })
        .collect();
    Ok(out)
}

/// Says on stderr which nodes' rows are missing, and why.
pub fn tell_unreachable(unreachable: &[Unreachable]) {
    for u in unreachable {
        eprintln!(
            "note: node {} did not answer, its rows are missing: {}",
            u.node_id, u.error
        );
    }
}

/// `n` bytes as `1.5 GiB` (binary units, one decimal past bytes).
pub fn human_bytes(n: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `f` without a fraction when it has none (`2`, `0.5`).
pub fn num(f: f64) -> String {
    if f.fract() == 0.0 {
        format!("{f:.0}")
    } else {
        format!("{f}")
    }
}

/// One line `    GPU I: NAME (MEMORY)` per GPU of a node.
pub fn print_gpus(gpus: &[wray_api::GpuSummary]) {
    for g in gpus {
        println!(
            "    GPU {}: {} ({})",
            g.index,
            g.name,
            human_bytes(g.memory as f64)
        );
    }
}

/// One line `  NAME: USED / TOTAL` per resource of `total`, what
/// `available` does not have free counted as used.
pub fn print_resources(total: &BTreeMap<String, f64>, available: &BTreeMap<String, f64>) {
    for (name, total) in total {
        let free = available.get(name).copied().unwrap_or(0.0);
        println!(
            "  {name}: {} / {}",
            quantity(name, total - free),
            quantity(name, *total)
        );
    }
}

/// A resource's quantity as people read it: bytes for `memory` (and
/// names ending in `_bytes`), a number otherwise.
pub fn quantity(name: &str, value: f64) -> String {
    if name == "memory" || name.ends_with("_bytes") {
        human_bytes(value)
    } else {
        num(value)
    }
}

/// `used / total` of each resource of `total` (`free` what is left).
fn used_of(total: &BTreeMap<String, f64>, free: &BTreeMap<String, f64>) -> Vec<String> {
    total
        .iter()
        .map(|(name, all)| {
            let left = free.get(name).copied().unwrap_or(0.0);
            format!(
                "{name} {} / {}",
                quantity(name, all - left),
                quantity(name, *all)
            )
        })
        .collect()
}

/// `wray status --address`: the cluster's resources in all and each
/// node's, the nodes (dead ones while they are kept), the tasks of the
/// node asked and the cluster's errors.
///
/// # Errors
/// The node cannot be reached, or answers an error.
pub(crate) fn status(client: &Client) -> anyhow::Result<()> {
    let get = |path: &str| -> anyhow::Result<String> {
        client.answer(client.request("GET", path).call())
    };
    let nodes: Vec<wray_api::NodeInfo> =
        serde_json::from_str(&get("/v1/nodes")?).context("the node's /v1/nodes")?;
    let resources: wray_api::Resources =
        serde_json::from_str(&get("/v1/resources")?).context("the node's /v1/resources")?;
    let health: Option<wray_api::Health> = get("/healthz")
        .ok()
        .and_then(|h| serde_json::from_str(&h).ok());
    let me = health.map(|h| h.node_id).unwrap_or_default();
    println!("======== wray status ========");
    let alive = nodes.iter().filter(|n| n.alive).count();
    let dead = nodes.len() - alive;
    println!(
        "Cluster: {alive} node{} alive{}",
        if alive == 1 { "" } else { "s" },
        if dead > 0 {
            format!(", {dead} dead (listed for a while after they die)")
        } else {
            String::new()
        }
    );
    println!("Resources of the cluster (used / total):");
    print_resources(&resources.total, &resources.available);
    println!("Nodes:");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    for n in &nodes {
        let state = if n.alive {
            match (&n.unusable, &n.unusable_reason) {
                (Some(why), Some(seen)) => format!("alive, not placed on: {why}: {seen}"),
                (Some(why), None) => format!("alive, not placed on: {why}"),
                _ => "alive".to_string(),
            }
        } else {
            match n.died_at_ms {
                Some(at) => format!("dead {} s ago", now_ms.saturating_sub(at) / 1000),
                None => "dead".to_string(),
            }
        };
        let here = if n.node_id == me {
            " [the node asked]"
        } else {
            ""
        };
        let at = n
            .http_address
            .as_deref()
            .or(n.address.as_deref())
            .map(|a| format!(" at {a}"))
            .unwrap_or_default();
        println!("  {} ({state}){at}{here}", n.node_id);
        if n.alive {
            println!(
                "    {}; {} tasks running; object store {} of {}",
                used_of(&n.resources, &n.resources_available).join(", "),
                n.running_tasks,
                human_bytes(n.object_store_used as f64),
                human_bytes(n.object_store_capacity as f64),
            );
        } else {
            let all: Vec<String> = n
                .resources
                .iter()
                .map(|(k, v)| format!("{k} {}", quantity(k, *v)))
                .collect();
            println!("    had {}", all.join(", "));
        }
        print_gpus(&n.gpus);
    }
    let mut counts = BTreeMap::new();
    for line in get("/metrics")?.lines() {
        // wray_tasks{state="FINISHED"} 3
        let Some(rest) = line.strip_prefix("wray_tasks{state=\"") else {
            continue;
        };
        if let Some((state, n)) = rest.split_once("\"} ") {
            if let Ok(n) = n.trim().parse::<u64>() {
                counts.insert(state.to_string(), n);
            }
        }
    }
    println!("Tasks of node {me} (the node asked):");
    for (s, n) in &counts {
        println!("  {s}: {n}");
    }
    let errors = rows::<ErrorList>(client, "/v1/errors", None, Order::Newest, COUNTED_ERRORS)?;
    println!(
        "Errors: {}{}",
        errors.rows.len(),
        if errors.more { "+" } else { "" }
    );
    tell_unreachable(&errors.unreachable);
    if let Some(line) = crate::client::control_plane_line(client) {
        println!("Control plane: {line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_reads_in_binary_units() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(1536.0), "1.5 KiB");
        assert_eq!(human_bytes(4.0 * 1024.0 * 1024.0 * 1024.0), "4.0 GiB");
        assert_eq!(quantity("memory", 2.0 * 1048576.0), "2.0 MiB");
        assert_eq!(quantity("CPU", 0.5), "0.5");
        assert_eq!(quantity("CPU", 3.0), "3");
    }
}
