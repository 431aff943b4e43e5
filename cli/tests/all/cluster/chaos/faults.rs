//! [`Injector`]: the cluster under test and the means to harm it: node
//! and etcd signals, drains, the relay in front of node 3, an impostor
//! node, a fake node record.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::relay::{Mode, Relay};
use super::schedule::{Fault, Schedule};
use crate::cluster::harness::{wait_within, Cluster};
use crate::support::in_dir;

/// The nodes of the cluster under test.
const NODES: usize = 5;
/// The node behind the relay.
const RELAYED: usize = 3;

/// The cluster and every fault in effect.
pub struct Injector {
    cluster: Cluster,
    relay: Relay,
    /// Each node's drain (`wray stop`) while it runs, by node.
    /// The drains under way: the node, the pid drained (the node may be
    /// killed and started again meanwhile) and the `wray stop`.
    drains: Vec<(usize, u32, Child)>,
    /// Processes stopped with SIGSTOP (nodes' and etcd's).
    paused: Vec<u32>,
    impostor: Option<Impostor>,
    fake: Option<FakeRecord>,
    /// Nodes to start again once etcd is back (a node does not start
    /// without it).
    waiting: Vec<usize>,
    /// Faults that need etcd (an impostor, a fake record), played once
    /// it is back.
    deferred: Vec<Fault>,
    /// Faults that could not be played (an impostor that could not
    /// start, say), for the report.
    pub notes: Vec<String>,
}

/// A node started with a wrong cluster token.
struct Impostor {
    pid: u32,
    tmp: tempfile::TempDir,
}

/// A node record put into etcd by hand, and the listener it names,
/// which takes connections and never answers.
struct FakeRecord {
    key: String,
    _held: Arc<Mutex<Vec<TcpStream>>>,
    _accepting: JoinHandle<()>,
}

impl Injector {
    /// Starts the relay and a cluster of [`NODES`] nodes of 2 CPUs each
    /// (node 3 behind the relay), waits until they see each other, deploys
    /// `api` and warms every node up.
    pub fn start() -> Injector {
        let relay = Relay::start();
        let port = relay.port().to_string();
        let plain: &[&str] = &["--num-cpus", "2"];
        let relayed: &[&str] = &[
            "--num-cpus",
            "2",
            "--bind",
            "127.0.0.2",
            "--advertise-host",
            "127.0.0.1",
            "--peer-port",
            &port,
        ];
        let mut flags = vec![plain; NODES];
        flags[RELAYED - 1] = relayed;
        let cluster = Cluster::start(NODES, &flags);
        super::ready(&cluster);
        Injector {
            cluster,
            relay,
            drains: Vec::new(),
            paused: Vec::new(),
            impostor: None,
            fake: None,
            waiting: Vec::new(),
            deferred: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The cluster.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Plays `schedule` from `started`: each fault at its time, healed at
    /// its time. The number of faults played.
    pub fn play(&mut self, schedule: &Schedule, started: Instant) -> usize {
        let mut steps: Vec<(Duration, bool, Fault)> = Vec::new();
        for e in &schedule.events {
            steps.push((e.at, true, e.fault));
            if e.fault != Fault::Cut {
                steps.push((e.heals, false, e.fault));
            }
        }
        // By time; at one instant, heals first.
        steps.sort_by_key(|(at, starts, _)| (*at, *starts));
        for (at, starts, fault) in steps {
            // The schedule's clock: a fault waits for its time, not for a
            // state.
            if let Some(left) = (started + at).checked_duration_since(Instant::now()) {
                std::thread::sleep(left);
            }
            println!(
                "chaos {:>6.1} s: {} {fault:?}",
                started.elapsed().as_secs_f64(),
                if starts { "start" } else { "heal" }
            );
            if starts {
                self.harm(fault);
            } else {
                self.heal(fault);
            }
        }
        schedule.events.len()
    }

    /// Starts `fault`.
    fn harm(&mut self, fault: Fault) {
        match fault {
            Fault::Kill(n) if self.cluster.node(n).alive() => {
                self.cluster.kill(n);
            }
            Fault::Pause(n) if self.cluster.node(n).alive() => {
                let pid = self.cluster.node(n).pid;
                signal(pid, libc::SIGSTOP);
                self.paused.push(pid);
            }
            Fault::Drain(n) if self.cluster.node(n).alive() => {
                let node = self.cluster.node(n);
                let pid = node.pid.to_string();
                let child = in_dir(&node.tmp, &["stop", "--timeout", "30", "--node", &pid])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("wray stop runs");
                self.drains.push((n, node.pid, child));
            }
            Fault::Kill(n) | Fault::Pause(n) | Fault::Drain(n) => {
                self.notes
                    .push(format!("{fault:?}: node {n} was already down"));
            }
            Fault::PauseEtcd => match self.cluster.etcd_pid() {
                Some(pid) => {
                    signal(pid, libc::SIGSTOP);
                    self.paused.push(pid);
                }
                None => self.notes.push("PauseEtcd: etcd was down".into()),
            },
            Fault::KillEtcd => self.cluster.stop_etcd(),
            Fault::Stall => self.relay.set(Mode::Stall),
            Fault::Refuse => {
                self.relay.set(Mode::Refuse);
                self.relay.cut();
            }
            Fault::Cut => self.relay.cut(),
            Fault::Impostor | Fault::FakeRecord if !self.etcd_up() => {
                self.deferred.push(fault);
            }
            Fault::Impostor if self.impostor.is_none() => match self.start_impostor() {
                Ok(impostor) => self.impostor = Some(impostor),
                Err(why) => self.notes.push(format!("Impostor: {why}")),
            },
            Fault::FakeRecord if self.fake.is_none() => match self.fake_record() {
                Ok(fake) => self.fake = Some(fake),
                Err(why) => self.notes.push(format!("FakeRecord: {why}")),
            },
            Fault::Impostor | Fault::FakeRecord => {}
        }
    }

    /// Ends `fault`.
    fn heal(&mut self, fault: Fault) {
        match fault {
            Fault::Kill(n) => self.start_again(n),
            // Only a drain that started (its node was up) is waited for:
            // the process it drained exits (or was killed and started
            // again by a `Kill`'s heal meanwhile).
            Fault::Drain(n) => {
                if let Some(i) = self.drains.iter().position(|(d, _, _)| *d == n) {
                    let (_, pid, mut child) = self.drains.remove(i);
                    let _ = child.wait();
                    self.drained(n, pid);
                    self.start_again(n);
                }
            }
            Fault::Pause(n) => {
                let pid = self.cluster.node(n).pid;
                self.paused.retain(|p| *p != pid);
                signal(pid, libc::SIGCONT);
            }
            Fault::PauseEtcd => {
                for pid in std::mem::take(&mut self.paused) {
                    let is_node = (1..=NODES).any(|n| self.cluster.node(n).pid == pid);
                    if is_node {
                        self.paused.push(pid);
                    } else {
                        signal(pid, libc::SIGCONT);
                    }
                }
                self.start_waiting();
            }
            Fault::KillEtcd => {
                if self.cluster.etcd_pid().is_none() {
                    self.cluster.restart_etcd();
                }
                self.start_waiting();
            }
            Fault::Stall | Fault::Refuse => self.relay.set(Mode::Pass),
            Fault::Cut => {}
            Fault::Impostor => {
                self.deferred.retain(|f| *f != Fault::Impostor);
                if let Some(impostor) = self.impostor.take() {
                    signal(impostor.pid, libc::SIGKILL);
                    drop(impostor.tmp);
                }
            }
            Fault::FakeRecord => {
                self.deferred.retain(|f| *f != Fault::FakeRecord);
                if let Some(fake) = self.fake.take() {
                    if let Err(e) = self.etcd(|mut client, _| async move {
                        client.delete(fake.key, None).await.map(|_| ())
                    }) {
                        self.notes.push(format!("FakeRecord: removing it: {e}"));
                    }
                }
            }
        }
    }

    /// Ends every fault still in effect: SIGCONT to what is stopped, the
    /// relay passing, etcd running, drained and killed nodes started
    /// again, the impostor and the fake record gone.
    pub fn heal_all(&mut self) {
        for pid in std::mem::take(&mut self.paused) {
            signal(pid, libc::SIGCONT);
        }
        self.relay.set(Mode::Pass);
        if self.cluster.etcd_pid().is_none() {
            self.cluster.restart_etcd();
        }
        self.start_waiting();
        for (n, pid) in std::mem::take(&mut self.drains)
            .into_iter()
            .map(|(n, pid, mut c)| {
                let _ = c.wait();
                (n, pid)
            })
            .collect::<Vec<_>>()
        {
            self.drained(n, pid);
            self.start_again(n);
        }
        for n in 2..=NODES {
            if !self.cluster.node(n).alive() {
                self.start_again(n);
            }
        }
        self.heal(Fault::Impostor);
        self.heal(Fault::FakeRecord);
    }

    /// Waits for the process `pid` that a drain of node `n` stopped to
    /// exit (or for node `n` to have been started again meanwhile).
    fn drained(&self, n: usize, pid: u32) {
        wait_within("a drained node to exit", Duration::from_secs(60), || {
            let node = self.cluster.node(n);
            node.pid != pid || !node.alive()
        });
    }

    /// Starts node `n` again unless it runs, or once etcd is back when
    /// it is down or stopped.
    fn start_again(&mut self, n: usize) {
        if !self.etcd_up() {
            if !self.waiting.contains(&n) {
                self.waiting.push(n);
            }
        } else if !self.cluster.node(n).alive() {
            self.cluster.restart(n);
        }
    }

    /// Whether etcd runs (neither killed nor stopped).
    fn etcd_up(&self) -> bool {
        self.cluster
            .etcd_pid()
            .is_some_and(|pid| !self.paused.contains(&pid))
    }

    /// Starts the nodes and plays the faults that waited for etcd, if it
    /// is back.
    fn start_waiting(&mut self) {
        for n in std::mem::take(&mut self.waiting) {
            self.start_again(n);
        }
        if self.etcd_up() {
            for fault in std::mem::take(&mut self.deferred) {
                self.harm(fault);
            }
        }
    }

    /// Starts a node that presents a wrong cluster token.
    fn start_impostor(&mut self) -> Result<Impostor, String> {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let token = tmp.path().join("wrong-token");
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&token)
            .map_err(|e| e.to_string())?;
        file.write_all(b"0123456789abcdef-not-the-cluster-token")
            .map_err(|e| e.to_string())?;
        let (endpoint, name) = self.cluster.etcd_endpoint();
        let token = token.to_str().ok_or("a UTF-8 path")?.to_string();
        let out = in_dir(
            tmp.path(),
            &[
                "start",
                "--port",
                "0",
                "--num-cpus",
                "2",
                "--etcd",
                &endpoint,
                "--cluster",
                name,
                "--cluster-token-file",
                &token,
                "--peer-port",
                "0",
                "--lease-ttl",
                "4",
                "--heartbeat-ms",
                "500",
            ],
        )
        .output()
        .map_err(|e| e.to_string())?;
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        let pid = said
            .split("(process ")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                format!(
                    "did not start: {said} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })?;
        Ok(Impostor { pid, tmp })
    }

    /// Copies node 4's record under a new id, its peer address a listener
    /// of ours that never answers, without a lease.
    fn fake_record(&self) -> Result<FakeRecord, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let address = listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .to_string();
        let held = Arc::new(Mutex::new(Vec::new()));
        let holding = held.clone();
        let accepting = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Ok(mut held) = holding.lock() {
                    held.push(stream);
                }
            }
        });
        let mut id = [0u8; 8];
        getrandom::fill(&mut id).map_err(|e| e.to_string())?;
        let id = format!("node-{}", hex::encode(id));
        let donor = self.cluster.node(4).node_id.clone();
        let key = self
            .etcd(move |mut client, prefix| async move {
                let got = client.get(format!("{prefix}{donor}"), None).await?;
                let value = got.kvs().first().map(|kv| kv.value().to_vec());
                let Some(value) = value else {
                    return Ok(Err(format!("no record of {donor} to copy")));
                };
                let Ok(mut record) = serde_json::from_slice::<serde_json::Value>(&value) else {
                    return Ok(Err(format!("{donor}'s record is not JSON")));
                };
                record["id"] = id.clone().into();
                record["peer_address"] = address.into();
                record["http_address"] = serde_json::Value::Null;
                let key = format!("{prefix}{id}");
                client.put(key.clone(), record.to_string(), None).await?;
                Ok(Ok(key))
            })
            .map_err(|e| e.to_string())??;
        Ok(FakeRecord {
            key,
            _held: held,
            _accepting: accepting,
        })
    }

    /// Runs `f` with a raw etcd client and the prefix of node records, on
    /// a runtime of its own, within 10 s.
    fn etcd<T, F, Fut>(&self, f: F) -> Result<T, String>
    where
        F: FnOnce(etcd_client::Client, String) -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let (endpoint, name) = self.cluster.etcd_endpoint();
        let prefix = format!("/wray/{name}/nodes/");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let work = async {
                let client = etcd_client::Client::connect([endpoint], None).await?;
                f(client, prefix).await
            };
            match tokio::time::timeout(Duration::from_secs(10), work).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("etcd did not answer within 10 s".into()),
            }
        })
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        for pid in std::mem::take(&mut self.paused) {
            signal(pid, libc::SIGCONT);
        }
        if let Some(impostor) = self.impostor.take() {
            signal(impostor.pid, libc::SIGKILL);
        }
        for (_, _, mut child) in std::mem::take(&mut self.drains) {
            let _ = child.wait();
        }
    }
}

/// Sends `sig` to `pid` (a process this suite started).
fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: a plain signal to a process id; at worst it names a process
    // that has ended (ESRCH).
    unsafe { libc::kill(pid as i32, sig) };
}
