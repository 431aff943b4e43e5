//! A job's options (`Jobs::submit_with_blocking`): directories the node allows
//! (the word count as a job), environment variables and metadata, the
//! driver's resources, and the job's time limit.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_bench::wordcount::count_dir;
use wray_host::StaticGpus;
use wray_host::{JobDir, JobError, JobInfo, JobOptions, JobStatus, Jobs, Node, NodeConfig, Stdio};

use crate::jobs::ended;
use crate::support::{component, small_tree};

/// A node with `cpus` CPUs, `gpus` made-up GPUs, custom resources
/// `custom`, jobs allowed to read `allow`, and `api` and `wordcount`
/// deployed.
fn node(cpus: usize, gpus: u32, custom: &[(&str, f64)], allow: &[&Path]) -> Arc<Node> {
    let mut config = NodeConfig {
        num_cpus: cpus,
        stdio: Stdio::memory(),
        max_instances: 64,
        allow_dirs: allow.iter().map(|p| p.to_path_buf()).collect(),
        resources: custom.iter().map(|(n, q)| (n.to_string(), *q)).collect(),
        ..NodeConfig::default()
    };
    config.gpu_discovery.0 = Arc::new(StaticGpus::count(gpus));
    let node = Node::start(config).expect("node starts");
    node.deploy_file_blocking(component("api"))
        .expect("api deploys");
    node.deploy_file_blocking(component("wordcount"))
        .expect("wordcount deploys");
    node
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// `host` seen at `guest`.
fn dir(host: &Path, guest: &str) -> JobDir {
    JobDir {
        host: host.to_string_lossy().into_owned(),
        guest: guest.into(),
    }
}

/// Waits (up to 60 s) until job `info`'s log holds `text`.
fn logged(jobs: &Jobs, info: &JobInfo, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !log_text(jobs, info).contains(text) {
        assert!(Instant::now() < deadline, "`{text}` never logged");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The whole kept log of job `info`.
fn log_text(jobs: &Jobs, info: &JobInfo) -> String {
    let log = jobs
        .log(info.job_id.parse().expect("a job id"))
        .expect("a log")
        .0;
    String::from_utf8_lossy(&log.read(0, usize::MAX).bytes).into_owned()
}

#[test]
fn the_word_count_runs_as_a_job_over_a_directory_the_node_allows() {
    let corpus = small_tree();
    let node = node(2, 0, &[], &[corpus.path()]);
    let jobs = Jobs::default();
    let expected = count_dir(corpus.path(), 20).expect("native count").render();
    let options = JobOptions {
        dirs: vec![dir(corpus.path(), "/data")],
        ..JobOptions::default()
    };
    let info = jobs
        .submit_with_blocking(node.clone(), "wordcount", args(&["/data"]), options.clone())
        .expect("submits");
    assert_eq!(info.options, options, "the info repeats the options");
    let end = ended(&jobs, &info);
    assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
    assert_eq!(log_text(&jobs, &info), expected);

    // Without the directory, as before: the job cannot list /data.
    let bare = jobs
        .submit_blocking(node, "wordcount", args(&["/data"]))
        .expect("submits");
    let end = ended(&jobs, &bare);
    assert_eq!(end.status, JobStatus::Failed, "{end:?}");
    assert!(
        end.message.as_deref().unwrap_or("").contains("/data"),
        "{end:?}"
    );
}

#[test]
fn a_job_naming_a_directory_the_node_does_not_allow_is_refused_naming_both() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let allowed = root.path().join("allowed");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(allowed.join("sub")).expect("mkdir");
    std::fs::create_dir(&outside).expect("mkdir");
    std::os::unix::fs::symlink(&outside, allowed.join("escape")).expect("symlink");
    let node = node(1, 0, &[], &[&allowed]);
    let jobs = Jobs::default();
    let submit = |host: &Path| {
        let options = JobOptions {
            dirs: vec![dir(host, "/data")],
            ..JobOptions::default()
        };
        jobs.submit_with_blocking(node.clone(), "wordcount", args(&["/data"]), options)
    };
    let sub = submit(&allowed.join("sub")).expect("a directory inside the allowed one");
    ended(&jobs, &sub);
    for (host, why) in [
        (outside.clone(), "not inside a directory the node allows"),
        (allowed.join("sub/../../outside"), "`..`"),
        (allowed.join("escape"), "through a link"),
        (Path::new("/").to_path_buf(), "not inside"),
    ] {
        let e = submit(&host).expect_err("refused");
        assert!(matches!(e, JobError::DirNotAllowed { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(&host.display().to_string()), "{text}");
        assert!(text.contains(why), "{text}");
        assert!(text.contains(&allowed.display().to_string()), "{text}");
    }
    assert_eq!(jobs.list().len(), 1, "refused jobs are not remembered");

    // A node that allows nothing says how to allow a directory.
    let closed = self::node(1, 0, &[], &[]);
    let options = JobOptions {
        dirs: vec![dir(&allowed, "/data")],
        ..JobOptions::default()
    };
    let e = jobs
        .submit_with_blocking(closed, "wordcount", Vec::new(), options)
        .expect_err("refused");
    assert!(e.to_string().contains("--allow-dir"), "{e}");
}

#[test]
fn env_and_metadata_round_trip_and_stay_with_their_job() {
    let tree = small_tree();
    let node = node(2, 0, &[], &[tree.path()]);
    let jobs = Jobs::default();
    let metadata = BTreeMap::from([
        ("owner".to_string(), "ci".to_string()),
        ("run".to_string(), "7".to_string()),
    ]);
    let options = JobOptions {
        dirs: vec![dir(tree.path(), "/data")],
        env: BTreeMap::from([("GREETING".to_string(), "hello wray".to_string())]),
        metadata: metadata.clone(),
        ..JobOptions::default()
    };
    let info = jobs
        .submit_with_blocking(
            node.clone(),
            "api",
            args(&["job_env", "GREETING", "/data/a/one.rs"]),
            options,
        )
        .expect("submits");
    let end = ended(&jobs, &info);
    assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
    let text = log_text(&jobs, &info);
    for who in ["driver", "task", "actor"] {
        let line = format!("{who} GREETING=hello wray; fn main() {{ let x = 1; x }}\n");
        assert!(text.contains(&line), "`{line}` not in {text}");
    }
    assert_eq!(end.options.metadata, metadata);
    let json = serde_json::to_value(&end).expect("json");
    assert_eq!(json["metadata"]["owner"], "ci");
    assert_eq!(json["env"]["GREETING"], "hello wray");
    let listed = jobs.list();
    assert_eq!(listed[0].options.metadata, metadata);

    // Another job sees neither.
    let other = jobs
        .submit_blocking(
            node,
            "api",
            args(&["job_env", "GREETING", "/data/a/one.rs"]),
        )
        .expect("submits");
    assert_eq!(ended(&jobs, &other).status, JobStatus::Succeeded);
    let text = log_text(&jobs, &other);
    assert!(
        text.contains("driver GREETING unset; cannot read /data/a/one.rs"),
        "{text}"
    );
    assert!(text.contains("task GREETING unset; cannot read"), "{text}");
    assert!(jobs.list()[1].options.metadata.is_empty());
}

#[test]
fn a_driver_resource_request_the_node_lacks_is_refused_at_submit() {
    let node = node(2, 1, &[("slot", 1.0)], &[]);
    let jobs = Jobs::default();
    for (options, asked) in [
        (
            JobOptions {
                num_gpus: Some(2.0),
                ..JobOptions::default()
            },
            "{GPU: 2}",
        ),
        (
            JobOptions {
                num_cpus: Some(3.0),
                ..JobOptions::default()
            },
            "{CPU: 3}",
        ),
        (
            JobOptions {
                resources: BTreeMap::from([("tpu".to_string(), 1.0)]),
                ..JobOptions::default()
            },
            "{tpu: 1}",
        ),
    ] {
        let e = jobs
            .submit_with_blocking(
                node.clone(),
                "api",
                args(&["job_output", "x", "1"]),
                options,
            )
            .expect_err("infeasible");
        assert!(matches!(e, JobError::Infeasible(_)), "{e}");
        let text = e.to_string();
        assert!(text.contains(asked), "{text}");
        assert!(
            text.contains("CPU: 2") && text.contains("slot: 1"),
            "{text}"
        );
    }
    let e = jobs
        .submit_with_blocking(
            node,
            "api",
            Vec::new(),
            JobOptions {
                timeout: Some(0.0),
                ..JobOptions::default()
            },
        )
        .expect_err("bad timeout");
    assert!(e.to_string().contains("a year"), "{e}");
    assert!(jobs.list().is_empty());
}

#[test]
fn a_driver_holds_its_resources_and_a_job_asking_for_them_waits() {
    let node = node(1, 1, &[("slot", 1.0)], &[]);
    let jobs = Jobs::default();
    let holding = JobOptions {
        num_gpus: Some(1.0),
        resources: BTreeMap::from([("slot".to_string(), 1.0)]),
        ..JobOptions::default()
    };
    let first = jobs
        .submit_with_blocking(node.clone(), "api", args(&["job_forever"]), holding.clone())
        .expect("submits");
    logged(&jobs, &first, "started");
    assert_eq!(node.available_resources().get("slot"), Some(&0.0));
    let second = jobs
        .submit_with_blocking(
            node.clone(),
            "api",
            args(&["job_env", "X", "/none"]),
            holding,
        )
        .expect("submits");
    // The first holds the slot until it ends: the second cannot start.
    let job = second.job_id.parse().expect("id");
    let waiting = jobs.info(job).expect("info");
    assert_eq!(waiting.status, JobStatus::Pending, "{waiting:?}");
    assert!(waiting.start_time.is_none());
    jobs.stop(first.job_id.parse().expect("id")).expect("stops");
    let end = ended(&jobs, &second);
    assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
    // It got the GPU for its driver.
    assert!(log_text(&jobs, &second).contains("driver gpus [0]\n"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while node.available_resources().get("slot") != Some(&1.0) {
        assert!(Instant::now() < deadline, "the slot never came back");
        std::thread::sleep(Duration::from_millis(5));
    }

    // A driver holding the node's only CPU gives it back while it waits
    // for its own task.
    let info = jobs
        .submit_with_blocking(
            node,
            "api",
            args(&["job_output", "one", "1"]),
            JobOptions {
                num_cpus: Some(1.0),
                ..JobOptions::default()
            },
        )
        .expect("submits");
    let end = ended(&jobs, &info);
    assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
}

#[test]
fn the_job_timeout_stops_the_job_and_says_so() {
    let node = node(1, 0, &[("slot", 1.0)], &[]);
    let jobs = Jobs::default();
    let info = jobs
        .submit_with_blocking(
            node.clone(),
            "api",
            args(&["job_forever"]),
            JobOptions {
                timeout: Some(1.0),
                ..JobOptions::default()
            },
        )
        .expect("submits");
    let end = ended(&jobs, &info);
    assert_eq!(end.status, JobStatus::Failed, "{end:?}");
    let message = end.message.unwrap_or_default();
    assert!(
        message.contains("timed out: the job ran past its timeout of 1 s"),
        "{message}"
    );
    assert!(log_text(&jobs, &info).contains("started"));

    // Waiting for resources counts: a job that never gets them ends too.
    let slot = JobOptions {
        resources: BTreeMap::from([("slot".to_string(), 1.0)]),
        ..JobOptions::default()
    };
    let holder = jobs
        .submit_with_blocking(node.clone(), "api", args(&["job_forever"]), slot.clone())
        .expect("submits");
    logged(&jobs, &holder, "started");
    let late = jobs
        .submit_with_blocking(
            node,
            "api",
            args(&["job_output", "late", "1"]),
            JobOptions {
                timeout: Some(0.5),
                ..slot
            },
        )
        .expect("submits");
    let end = ended(&jobs, &late);
    assert_eq!(end.status, JobStatus::Failed, "{end:?}");
    assert!(end.start_time.is_none(), "it never started: {end:?}");
    let message = end.message.unwrap_or_default();
    assert!(message.contains("timeout of 0.5 s"), "{message}");
    assert!(
        message.contains("waited for resources {slot: 1}"),
        "{message}"
    );
    jobs.stop(holder.job_id.parse().expect("id"))
        .expect("stops");
    assert_eq!(ended(&jobs, &holder).status, JobStatus::Stopped);
}
