//! [`Cluster`]: `n` nodes started by `wray start` as processes of their
//! own, each in a directory of its own, joined through a throwaway etcd
//! (control-plane's test server, shared by `#[path]` in `node.rs`) with a
//! cluster token file; stopped by process id when dropped.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::node::etcd_server::EtcdServer;
use crate::node_ops::StartedNode;
use crate::support::{component, success_stdout};

/// The cluster's name (each cluster has an etcd of its own).
const NAME: &str = "wray-test";
/// The nodes' lease TTL in seconds: a node that stops heartbeating is dead
/// for the others once its lease ends.
const LEASE_TTL_S: &str = "4";
/// How often a node renews its lease, in milliseconds.
const HEARTBEAT_MS: &str = "500";
/// How long a node may drain after SIGTERM when the cluster is dropped,
/// before it gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Bytes of the cluster token (written as hex).
const TOKEN_BYTES: usize = 32;

/// A running cluster. Nodes are numbered from 1, as `node-1`.. in the
/// tests' words.
pub struct Cluster {
    nodes: Vec<StartedNode>,
    /// Each node's CPUs and flags (after the cluster's own), to start it
    /// again ([`Cluster::restart`]).
    flags: Vec<(u32, Vec<String>)>,
    /// How many nodes were started, restarts included (names their
    /// directories).
    started: usize,
    etcd: EtcdServer,
    token_file: PathBuf,
    /// The nodes' `TMPDIR`s and the token file; removed last.
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts etcd, writes a token file (mode 0600) and starts `n` nodes,
    /// node `i` (from 1) with `extra[i - 1]` appended to its flags (none
    /// where `extra` is shorter; each has one CPU unless those flags say
    /// `--num-cpus N`; `--cluster-token-file`, `--peer-port`,
    /// `--lease-ttl` and `--heartbeat-ms` among them replace the
    /// defaults). Returns once every node runs; whether
    /// they see each other yet is [`Cluster::wait_all_alive`]'s.
    ///
    /// # Panics
    /// When etcd or a node does not start.
    pub fn start(n: usize, extra: &[&[&str]]) -> Self {
        let etcd = EtcdServer::start();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let token_file = dir.path().join("cluster-token");
        write_token(&token_file);
        let mut cluster = Self {
            nodes: Vec::with_capacity(n),
            flags: Vec::with_capacity(n),
            started: 0,
            etcd,
            token_file,
            _dir: dir,
        };
        for i in 1..=n {
            // `--num-cpus N` among a node's flags replaces the default 1.
            let mut cpus = 1;
            let mut own = Vec::new();
            let mut flags = extra.get(i - 1).copied().unwrap_or_default().iter();
            while let Some(flag) = flags.next() {
                match (*flag, flags.clone().next()) {
                    ("--num-cpus", Some(n)) => {
                        cpus = n.parse().expect("--num-cpus takes a count");
                        flags.next();
                    }
                    _ => own.push(flag.to_string()),
                }
            }
            cluster.flags.push((cpus, own));
            // Pushed as each starts: a failed start still stops the others.
            let node = cluster.start_node(i);
            cluster.nodes.push(node);
        }
        cluster
    }

    /// [`Cluster::start`], then waits (up to 30 s) until every node sees
    /// every other alive, and deploys the `api` test component through
    /// node 1: where most scenarios begin.
    pub fn with_api(n: usize, extra: &[&[&str]]) -> Self {
        let cluster = Self::start(n, extra);
        cluster.wait_all_alive(Duration::from_secs(30));
        deploy_api(cluster.node(1));
        cluster
    }

    /// Starts node `i` (from 1) with its flags, in a directory of its own.
    fn start_node(&mut self, i: usize) -> StartedNode {
        self.started += 1;
        let tmp = self._dir.path().join(format!("node{}", self.started));
        std::fs::create_dir(&tmp).expect("a node's directory");
        let endpoint = self.etcd.endpoint();
        let token = self.token_file.to_str().expect("a UTF-8 path").to_string();
        let (cpus, own) = &self.flags[i - 1];
        let mut args = vec!["--etcd", &endpoint, "--cluster", NAME];
        // A flag of these among a node's own replaces the default.
        for (flag, value) in [
            ("--cluster-token-file", token.as_str()),
            ("--peer-port", "0"),
            ("--lease-ttl", LEASE_TTL_S),
            ("--heartbeat-ms", HEARTBEAT_MS),
        ] {
            if !own.iter().any(|f| f == flag) {
                args.extend([flag, value]);
            }
        }
        args.extend(own.iter().map(String::as_str));
        StartedNode::start_with_cpus(&tmp, *cpus, &args)
    }

    /// Starts node `i` again (a new process and node id, in a new
    /// directory, with the same flags), once its process has ended.
    ///
    /// # Panics
    /// While it still runs, or when it does not start.
    pub fn restart(&mut self, i: usize) {
        assert!(!self.node(i).alive(), "node {i} still runs");
        let node = self.start_node(i);
        self.nodes[i - 1] = node;
    }

    /// The etcd endpoint and the cluster's name.
    pub fn etcd_endpoint(&self) -> (String, &'static str) {
        (self.etcd.endpoint(), NAME)
    }

    /// etcd's process id while it runs.
    pub fn etcd_pid(&self) -> Option<u32> {
        self.etcd.pid()
    }

    /// How many nodes the cluster has (dead ones included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Node `i` (from 1).
    pub fn node(&self, i: usize) -> &StartedNode {
        &self.nodes[i - 1]
    }

    /// The ids of every node, in order.
    pub fn node_ids(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.node_id.clone()).collect()
    }

    /// The cluster token file.
    pub fn token_file(&self) -> &Path {
        &self.token_file
    }

    /// `GET /v1/nodes` on node `i`: the nodes it lists, or why it did not
    /// answer with a JSON array.
    pub fn try_nodes_seen_by(&self, i: usize) -> Result<Vec<Value>, String> {
        let answer = self
            .node(i)
            .request("GET", "/v1/nodes")
            .timeout(Duration::from_secs(5))
            .call()
            .map_err(|e| format!("GET /v1/nodes on node {i}: {e}"))?;
        let json: Value = answer
            .into_json()
            .map_err(|e| format!("GET /v1/nodes on node {i}: not JSON: {e}"))?;
        match json {
            Value::Array(nodes) => Ok(nodes),
            other => Err(format!("GET /v1/nodes on node {i}: not an array: {other}")),
        }
    }

    /// `GET /v1/nodes` on node `i`, which must answer.
    pub fn nodes_seen_by(&self, i: usize) -> Vec<Value> {
        self.try_nodes_seen_by(i).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Each node's `state` as node `i` sees it, by node id.
    pub fn try_states_seen_by(&self, i: usize) -> Result<BTreeMap<String, String>, String> {
        let nodes = self.try_nodes_seen_by(i)?;
        Ok(nodes
            .iter()
            .map(|n| {
                let id = n["node_id"].as_str().unwrap_or("").to_string();
                let state = n["state"].as_str().unwrap_or("").to_string();
                (id, state)
            })
            .collect())
    }

    /// Whether every live node of ours lists every other one `ALIVE`
    /// (killed nodes are skipped as viewers, not as the viewed), and has
    /// probed each (none is listed `unusable: unprobed`).
    fn everyone_alive_everywhere(&self) -> bool {
        let ids = self.node_ids();
        (1..=self.nodes.len())
            .filter(|&i| self.node(i).alive())
            .all(|i| {
                self.try_nodes_seen_by(i).is_ok_and(|nodes| {
                    ids.iter().all(|id| {
                        nodes.iter().any(|n| {
                            n["node_id"] == id.as_str()
                                && n["state"] == "ALIVE"
                                && n["unusable"] != "unprobed"
                        })
                    })
                })
            })
    }

    /// The etcd the nodes share.
    pub fn etcd(&self) -> &EtcdServer {
        &self.etcd
    }

    /// Why node `i` does not place work on node `id` (its `unusable`
    /// field in node `i`'s `/v1/nodes`), if it does not.
    pub fn unusable_seen_by(&self, i: usize, id: &str) -> Option<String> {
        let nodes = self.try_nodes_seen_by(i).ok()?;
        let node = nodes.iter().find(|n| n["node_id"] == id)?;
        node["unusable"].as_str().map(str::to_string)
    }

    /// Waits until every node lists every node `ALIVE`, `limit` at most;
    /// the time it took.
    ///
    /// # Panics
    /// Past `limit`, with what each node lists.
    pub fn wait_all_alive(&self, limit: Duration) -> Duration {
        let start = Instant::now();
        while !self.everyone_alive_everywhere() {
            if start.elapsed() > limit {
                panic!(
                    "the nodes did not all list each other ALIVE within {limit:?}: {}",
                    self.views()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        start.elapsed()
    }

    /// What each node lists, for a failure's message.
    pub fn views(&self) -> String {
        (1..=self.nodes.len())
            .map(|i| match self.try_nodes_seen_by(i) {
                Ok(nodes) => format!("\n  node {i} sees {}", Value::Array(nodes)),
                Err(e) => format!("\n  {e}"),
            })
            .collect()
    }

    /// Node `i`'s peer address (`host:port`), as it lists itself.
    pub fn peer_address(&self, i: usize) -> String {
        let id = &self.node(i).node_id;
        let nodes = self.nodes_seen_by(i);
        let me = nodes
            .iter()
            .find(|n| n["node_id"] == id.as_str())
            .unwrap_or_else(|| panic!("node {i} does not list itself: {nodes:?}"));
        me["address"]
            .as_str()
            .unwrap_or_else(|| panic!("no peer address for node {i}: {me}"))
            .to_string()
    }

    /// SIGKILLs node `i` and waits until its process has ended; the
    /// instant of the kill.
    pub fn kill(&self, i: usize) -> Instant {
        let node = self.node(i);
        let killed = Instant::now();
        // SAFETY: a plain signal to a node this cluster started.
        assert_eq!(unsafe { libc::kill(node.pid as i32, libc::SIGKILL) }, 0);
        node.wait_dead();
        killed
    }

    /// Stops etcd (kill, wait), keeping its data and ports.
    pub fn stop_etcd(&mut self) {
        self.etcd.stop();
    }

    /// Starts etcd again on the same ports and data, and waits until it
    /// is healthy.
    pub fn restart_etcd(&mut self) {
        self.etcd.restart();
    }
}

impl Drop for Cluster {
    /// SIGTERM to every node still running, SIGKILL to those still running
    /// after [`STOP_GRACE`]; then etcd stops (its own drop).
    fn drop(&mut self) {
        let running: Vec<&StartedNode> = self.nodes.iter().filter(|n| n.alive()).collect();
        for node in &running {
            // SAFETY: a plain signal to a node this cluster started.
            unsafe { libc::kill(node.pid as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + STOP_GRACE;
        while running.iter().any(|n| n.alive()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        for node in running.iter().filter(|n| n.alive()) {
            // SAFETY: as above.
            unsafe { libc::kill(node.pid as i32, libc::SIGKILL) };
            node.wait_dead();
        }
    }
}

/// Writes `TOKEN_BYTES` random bytes as hex to `path`, mode 0600 from its
/// creation.
pub fn write_token(path: &Path) {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).expect("random bytes");
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("the token file");
    file.write_all(hex::encode(bytes).as_bytes())
        .expect("writing the token");
}

/// Polls `done` until it holds, `limit` at most; the time it took.
///
/// # Panics
/// Past `limit`, naming `what`.
pub fn wait_within(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// An accelerator: the cluster scenarios' tasks ask for one.
pub const ACCELERATED: [&str; 2] = ["--resources", r#"{"accelerator": 2}"#];

/// Deploys `api` through `node`.
pub fn deploy_api(node: &StartedNode) {
    success_stdout(&node.run(&["deploy", component("api").to_str().expect("UTF-8")]));
}

/// The log of job `id` on `node` so far.
pub fn job_log(node: &StartedNode, id: &str) -> String {
    success_stdout(&node.run(&["job", "logs", id]))
}

/// Runs job `api -- args` on `node` to its end; its log.
pub fn job(node: &StartedNode, args: &[&str]) -> String {
    let mut argv = vec!["job", "submit", "api", "--"];
    argv.extend_from_slice(args);
    let said = success_stdout(&node.run(&argv));
    assert!(said.contains("SUCCEEDED"), "{said}");
    job_log(node, &job_id(&said))
}

/// Submits job `api -- args` on `node` without waiting; its id.
pub fn start_job(node: &StartedNode, args: &[&str]) -> String {
    let mut argv = vec!["job", "submit", "--no-wait", "api", "--"];
    argv.extend_from_slice(args);
    job_id(&success_stdout(&node.run(&argv)))
}

/// The job id (16 hex digits) `wray job submit` printed in `said`: the one
/// of its last `job <id> <status>` line (the job's own output comes
/// first, and may hold 16 hex digits too), else its only word (with
/// `--no-wait`).
pub fn job_id(said: &str) -> String {
    let is_id = |w: &&str| w.len() == 16 && w.chars().all(|c| c.is_ascii_hexdigit());
    let status_line = said
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("job ")?.split_whitespace().next());
    status_line
        .filter(is_id)
        .or_else(|| said.split_whitespace().find(is_id))
        .unwrap_or_else(|| panic!("no job id in {said}"))
        .to_string()
}

/// Waits (up to `limit`) for job `id` on `node` to end; its status line
/// (`wray job status`).
pub fn wait_job_end(node: &StartedNode, id: &str, limit: Duration) -> String {
    let status = || success_stdout(&node.run(&["job", "status", id]));
    wait_within("the job to end", limit, || {
        let s = status();
        s.contains("SUCCEEDED") || s.contains("FAILED") || s.contains("STOPPED")
    });
    status()
}

/// The rows of `node`'s task table (its last 1,000).
pub fn tasks(node: &StartedNode) -> Vec<Value> {
    let table = node.get(OWN_TASKS);
    table["tasks"].as_array().cloned().unwrap_or_default()
}

/// The path of a node's own task table, its last 1,000 rows (`?local=true`:
/// a node's `/v1/tasks` answers for the whole cluster otherwise); a task it
/// sent to another node is a row of it, named by that node.
pub const OWN_TASKS: &str = "/v1/tasks?limit=1000&local=true";

/// How many of `node`'s tasks of `functions` are in `state`.
pub fn count(node: &StartedNode, functions: &[&str], state: &str) -> usize {
    tasks(node)
        .iter()
        .filter(|t| functions.iter().any(|f| t["function"] == *f) && t["state"] == state)
        .count()
}

/// The `ran NODE COUNT` lines of a scenario's log, by node.
pub fn ran(log: &str) -> BTreeMap<String, u64> {
    log.lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("ran ")?.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?))
        })
        .collect()
}
