//! Shared helpers: finding built components, starting nodes, running
//! scenarios of the `api` fixture.

use std::time::Duration;

use wray_host::{Node, NodeConfig, Preopen, Stdio};

#[path = "../common/components.rs"]
mod components;
pub use components::component;

/// A test node: in-memory stdout, no disk cache side effects beyond the
/// shared compiled cache.
pub struct TestNode {
    pub node: std::sync::Arc<Node>,
    pub stdio: Stdio,
}

/// Node settings for one test.
#[derive(Clone)]
pub struct Setup {
    pub num_cpus: usize,
    pub task_timeout: Option<Duration>,
    pub task_memory_limit: u64,
    pub preopens: Vec<Preopen>,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            num_cpus: 2,
            task_timeout: Some(Duration::from_secs(120)),
            task_memory_limit: 1 << 30,
            preopens: Vec::new(),
        }
    }
}

impl TestNode {
    pub fn start(setup: Setup) -> Self {
        Self::start_with(setup, |_| {})
    }

    /// Starts a node after `tweak` adjusts its configuration.
    pub fn start_with(setup: Setup, tweak: impl FnOnce(&mut NodeConfig)) -> Self {
        let stdio = Stdio::memory();
        let mut config = NodeConfig {
            num_cpus: setup.num_cpus,
            task_timeout: setup.task_timeout,
            task_memory_limit: setup.task_memory_limit,
            preopens: setup.preopens,
            stdio: stdio.clone(),
            max_instances: 256,
            ..NodeConfig::default()
        };
        tweak(&mut config);
        Self {
            node: Node::start(config).expect("node starts"),
            stdio,
        }
    }

    /// Deploys `name`, runs `main(args)`, and returns (result, stdout).
    pub fn run(&self, name: &str, args: &[&str]) -> (Result<(), String>, String) {
        let app = self
            .node
            .deploy_file_blocking(component(name))
            .expect("component deploys");
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let outcome = self
            .node
            .run_main_blocking(&app.name, &args)
            .expect("main runs");
        let result = outcome.result.map_err(|e| e.to_string());
        (result, self.stdio.stdout_text())
    }
}

/// Runs scenario `scenario` of the `api` fixture and returns its stdout
/// lines, failing the test if `main` failed.
pub fn scenario(setup: Setup, scenario: &str) -> Vec<String> {
    let node = TestNode::start(setup);
    let (result, stdout) = node.run("api", &[scenario]);
    assert_eq!(
        result,
        Ok(()),
        "scenario {scenario} failed; stdout:\n{stdout}"
    );
    stdout.lines().map(str::to_string).collect()
}

/// A `json` argument holding `text`.
pub fn json(text: &str) -> wray_host::Arg {
    wray_host::Arg::Value(wray_host::Payload {
        codec: wray_host::Codec::Json,
        data: text.as_bytes().to_vec(),
        refs: Vec::new(),
    })
}

/// Options of a call whose results come back as JSON.
pub fn json_results() -> wray_host::TaskOptions {
    wray_host::TaskOptions {
        result_codec: Some(wray_host::Codec::Json),
        ..wray_host::TaskOptions::new()
    }
}

/// A small tree of files for the word counts: nested directories, a
/// non-UTF-8 byte, an empty file.
pub fn small_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(dir.path().join("a/b")).expect("mkdir");
    std::fs::write(dir.path().join("a/one.rs"), "fn main() { let x = 1; x }").expect("write");
    std::fs::write(dir.path().join("a/b/two.txt"), b"x x\xffy_z Y_z 9").expect("write");
    std::fs::write(dir.path().join("three"), "").expect("write");
    dir
}
