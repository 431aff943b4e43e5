//! A job's environment on every node its tasks reach, on three one-CPU
//! nodes: the README's word count (`examples/wordcount`) submitted with
//! `--working-dir` (a local directory packed, uploaded once, fetched by
//! each node) and with `--dir` on nodes that all allow it gives the exact
//! total with map tasks run on other nodes than the driver's; a task on
//! another node sees the job's `--env` and working directory, and its
//! output (stdout and stderr, whole lines) is in the job's log and in
//! `wray job submit`'s follow of it; a `--dir` no other node allows fails
//! the job at once, naming those nodes.

use std::path::Path;
use std::time::Duration;

use super::harness::{count, job_id, Cluster};
use crate::support::{component, success_stdout};

/// Words per line and lines per file of the corpus.
const WORDS_PER_LINE: usize = 12;
const LINES_PER_FILE: usize = 4_000;

/// Writes a corpus of 16 files (about 4 MiB: four map tasks of the word
/// count) in nested directories under `root`, plus files the working
/// directory must leave out (`.git`, `*.skip`); the number of words of
/// the files kept, counted as the word count counts them.
fn corpus(root: &Path) -> u64 {
    let mut total = 0u64;
    let mut seed = 7u64;
    for f in 0..16 {
        let dir = root.join(format!("part{}/sub{}", f % 3, f % 2));
        std::fs::create_dir_all(&dir).expect("a corpus directory");
        let mut text = String::new();
        for _ in 0..LINES_PER_FILE {
            for w in 0..WORDS_PER_LINE {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let word = (seed >> 33) % 5000;
                text.push_str(&format!("w{word}_{}", w % 3));
                text.push_str(if w % 5 == 4 { ", " } else { " " });
            }
            text.push_str("-- x.y\n");
        }
        total += words(text.as_bytes());
        std::fs::write(dir.join(format!("file{f}.txt")), text).expect("a corpus file");
    }
    std::fs::create_dir_all(root.join(".git/objects")).expect(".git");
    std::fs::write(root.join(".git/objects/pack"), "left out left out").expect(".git file");
    std::fs::write(root.join("notes.skip"), "also left out").expect("skip file");
    total
}

/// The words of `bytes` as the word count counts them: maximal runs of
/// `[A-Za-z0-9_]`.
fn words(bytes: &[u8]) -> u64 {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let mut n = 0;
    let mut inside = false;
    for b in bytes {
        if word(b) && !inside {
            n += 1;
        }
        inside = word(b);
    }
    n
}

/// The word count's `total` line of `said`.
fn total_of(said: &str) -> u64 {
    said.lines()
        .find_map(|l| l.strip_prefix("total\t"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in {said}"))
}

/// Map tasks of the word count that finished on nodes 2 and 3.
fn maps_elsewhere(cluster: &Cluster) -> usize {
    (2..=3)
        .map(|i| count(cluster.node(i), &["count_words"], "FINISHED"))
        .sum()
}

#[test]
fn the_readme_word_count_runs_on_three_nodes_through_a_working_dir_and_through_dirs() {
    let data = tempfile::tempdir().expect("a directory");
    let root = data.path().join("corpus");
    let want = corpus(&root);
    let allow = data.path().to_str().expect("UTF-8").to_string();
    let allowed: [&str; 2] = ["--allow-dir", &allow];
    let cluster = Cluster::start(3, &[&allowed, &allowed, &allowed]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let wasm = component("wordcount");
    let wasm = wasm.to_str().expect("UTF-8");
    let corpus_dir = root.to_str().expect("UTF-8");

    // A local directory, taken to every node: `.` is the guests' current
    // directory, so the driver's relative paths resolve on every node.
    let said = success_stdout(&cluster.node(1).run(&[
        "job",
        "submit",
        "--working-dir",
        corpus_dir,
        "--exclude",
        "*.skip",
        wasm,
        "--",
        ".",
    ]));
    assert!(said.contains("SUCCEEDED"), "{said}");
    assert_eq!(total_of(&said), want, "{said}");
    let first = maps_elsewhere(&cluster);
    println!("--working-dir: total {want}, {first} map tasks on nodes 2 and 3");
    assert!(first >= 1, "no map task ran on node 2 or 3");

    // A host directory every node allows.
    let dir = format!("{corpus_dir}::/corpus");
    let said = success_stdout(&cluster.node(1).run(&[
        "job",
        "submit",
        "--dir",
        &dir,
        "wordcount",
        "--",
        "/corpus",
    ]));
    assert!(said.contains("SUCCEEDED"), "{said}");
    // `.git` and `notes.skip` are read here: the same files as the
    // working directory's, and theirs.
    let extra = words(b"left out left out") + words(b"also left out");
    assert_eq!(total_of(&said), want + extra, "{said}");
    let second = maps_elsewhere(&cluster) - first;
    println!(
        "--dir: total {}, {second} map tasks on nodes 2 and 3",
        want + extra
    );
    assert!(second >= 1, "no map task ran on node 2 or 3");
}

#[test]
fn a_task_of_a_job_with_dirs_runs_only_on_the_nodes_that_allow_them() {
    let data = tempfile::tempdir().expect("a directory");
    let root = data.path().join("corpus");
    let want = corpus(&root);
    let extra = words(b"left out left out") + words(b"also left out");
    let allow = data.path().to_str().expect("UTF-8").to_string();
    let allowed: [&str; 2] = ["--allow-dir", &allow];
    // Node 3 does not allow the corpus: the map tasks placed there go
    // to node 2, or run here.
    let cluster = Cluster::start(3, &[&allowed, &allowed, &[]]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let wasm = component("wordcount");
    let dir = format!("{}::/corpus", root.to_str().expect("UTF-8"));
    let said = success_stdout(&cluster.node(1).run(&[
        "job",
        "submit",
        "--dir",
        &dir,
        wasm.to_str().expect("UTF-8"),
        "--",
        "/corpus",
    ]));
    assert!(said.contains("SUCCEEDED"), "{said}");
    assert_eq!(total_of(&said), want + extra, "{said}");
    let on = |i| count(cluster.node(i), &["count_words"], "FINISHED");
    println!("map tasks on node 2: {}, on node 3: {}", on(2), on(3));
    assert_eq!(on(3), 0, "node 3 ran a map task of the job");
    assert!(on(2) >= 1, "no map task ran on node 2");
}

#[test]
fn a_task_on_another_node_sees_the_jobs_env_and_working_dir_and_its_output_reaches_the_jobs_log() {
    let cluster = Cluster::with_api(3, &[]);
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(
        dir.path().join("greeting.txt"),
        "hello from the working dir\n",
    )
    .expect("a file");
    let working = dir.path().to_str().expect("UTF-8");
    // The driver holds node 1's only CPU: its tasks go to node 2 or 3.
    let said = success_stdout(&cluster.node(1).run(&[
        "job",
        "submit",
        "--num-cpus",
        "1",
        "--env",
        "WRAY_JOB_VAR=forty-two",
        "--working-dir",
        working,
        "api",
        "--",
        "job_env",
        "WRAY_JOB_VAR",
        "greeting.txt",
    ]));
    assert!(said.contains("SUCCEEDED"), "{said}");
    assert!(
        said.lines()
            .any(|l| l == "task WRAY_JOB_VAR=forty-two; hello from the working dir"),
        "{said}"
    );
    let elsewhere: usize = (2..=3)
        .map(|i| count(cluster.node(i), &["task_env"], "FINISHED"))
        .sum();
    assert_eq!(elsewhere, 1, "task_env did not run on node 2 or 3");

    // Output: the task's stdout and its stderr (which a wasm guest writes
    // a line in pieces), each a whole line, in the log `wray job submit`
    // followed and in the job's log.
    let said = success_stdout(&cluster.node(1).run(&[
        "job",
        "submit",
        "--num-cpus",
        "1",
        "api",
        "--",
        "job_output",
        "far",
        "2",
    ]));
    assert!(said.contains("SUCCEEDED"), "{said}");
    let log = success_stdout(&cluster.node(1).run(&["job", "logs", &job_id(&said)]));
    for text in [&said, &log] {
        for line in ["task far", "task far stderr", "driver far 1", "done far 3"] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in {text}"
            );
        }
    }
    let shouted: usize = (2..=3)
        .map(|i| count(cluster.node(i), &["shout"], "FINISHED"))
        .sum();
    assert_eq!(shouted, 1, "shout did not run on node 2 or 3");
}

#[test]
fn a_dir_no_other_node_allows_fails_the_job_at_once_naming_those_nodes() {
    let data = tempfile::tempdir().expect("a directory");
    std::fs::create_dir(data.path().join("corpus")).expect("a directory");
    let allow = data.path().to_str().expect("UTF-8").to_string();
    let cluster = Cluster::with_api(3, &[&["--allow-dir", allow.as_str()]]);
    let dir = format!("{allow}/corpus::/corpus");
    let out = cluster.node(1).run(&[
        "job",
        "submit",
        "--dir",
        &dir,
        "api",
        "--",
        "job_env",
        "X",
        "/corpus/x",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    for i in 2..=3 {
        let id = &cluster.node(i).node_id;
        assert!(said.contains(id.as_str()), "{id} not named: {said}");
    }
    assert!(said.contains("--allow-dir"), "{said}");
    assert!(!said.contains(&cluster.node(1).node_id), "{said}");
    // Nothing ran.
    let jobs = success_stdout(&cluster.node(1).run(&["job", "list"]));
    assert!(jobs.contains("0 jobs"), "{jobs}");
}
