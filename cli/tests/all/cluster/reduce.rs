//! Reductions across nodes (`api`'s `cluster_tree_reduce` and
//! `cluster_wordcount`, whose tasks ask for `{"accelerator": 1}`): a tree
//! reduce and a word count give on three nodes the results they give on
//! one, and their closed forms, with tasks run on every node; a node
//! SIGKILLed in the middle of a tree reduce: the result is still exact,
//! the tasks it held run again on the other node, and the results it had
//! already sent home are not computed again.

use std::time::Duration;

use super::harness::{count, deploy_api, job, start_job, tasks, wait_within, Cluster};
use crate::support::success_stdout;

/// Two accelerators: a node runs two of the scenarios' tasks at once, so
/// that a burst of them spills over to the other nodes.
const TWO: [&str; 2] = ["--resources", r#"{"accelerator": 2}"#];

/// Four accelerators, for the nodes of the kill test.
const FOUR: [&str; 2] = ["--resources", r#"{"accelerator": 4}"#];

/// The tree reduce of the first test: leaves, ms each, numbers each.
const TREE: [&str; 4] = ["cluster_tree_reduce", "12", "250", "1000"];

/// The word count of the first test: chunks, kinds of words, ms per map.
const WORDS: [&str; 4] = ["cluster_wordcount", "8", "20", "250"];

/// The functions of each scenario.
const TREE_FUNCTIONS: [&str; 2] = ["reduce_leaf", "reduce_add"];
const WORD_FUNCTIONS: [&str; 2] = ["count_chunk", "merge_counts"];

/// The tree reduce's line, up to its digest, for `n` leaves of `len`
/// numbers: leaf `i` is `[i * len + j]`, so the sum's element `j` is
/// `len * n(n-1)/2 + n * j`.
fn tree_closed_form(n: u64, len: u64) -> String {
    let first = len * (n * (n - 1) / 2);
    let last = first + n * (len - 1);
    let sum = len * first + n * (len * (len - 1) / 2);
    format!("tree_reduce len {len} sum {sum} first {first} last {last} digest ")
}

/// The word count's line, up to its digest, for `chunks` chunks of
/// `kinds` kinds: `w<k>` is said `k` times a chunk, `c<c>` once.
fn words_closed_form(chunks: u64, kinds: u64) -> String {
    let total = chunks * (kinds * (kinds + 1) / 2 + 1);
    let distinct = kinds + chunks;
    format!(
        "wordcount total {total} distinct {distinct} top w{kinds} {} digest ",
        chunks * kinds
    )
}

/// The line of `log` that starts with `prefix`.
fn line<'a>(log: &'a str, prefix: &str) -> &'a str {
    log.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {log}"))
}

/// The results of both scenarios on `cluster`'s node 1: the tree reduce's
/// line and the word count's.
fn run_both(cluster: &Cluster) -> (String, String) {
    let tree = job(cluster.node(1), &TREE);
    let words = job(cluster.node(1), &WORDS);
    (
        line(&tree, "tree_reduce len").to_string(),
        line(&words, "wordcount total").to_string(),
    )
}

#[test]
fn the_word_count_and_a_tree_reduce_give_the_same_results_on_three_nodes_as_on_one() {
    let one = {
        let cluster = Cluster::start(1, &[&TWO]);
        cluster.wait_all_alive(Duration::from_secs(30));
        deploy_api(cluster.node(1));
        run_both(&cluster)
    };
    let cluster = Cluster::with_api(3, &[&TWO, &TWO, &TWO]);
    let three = run_both(&cluster);
    println!("one node:    {one:?}\nthree nodes: {three:?}");

    for (got, want) in [
        (&one.0, tree_closed_form(12, 1000)),
        (&one.1, words_closed_form(8, 20)),
    ] {
        assert!(
            got.starts_with(&want) && got.ends_with(" exact"),
            "{got}: want {want}.. exact"
        );
    }
    assert_eq!(three, one, "three nodes against one");

    // A burst spills over: node 1 runs two at once and sends the next two
    // to each of the other nodes.
    for i in 2..=3 {
        for (what, functions) in [
            ("tree reduce", TREE_FUNCTIONS),
            ("word count", WORD_FUNCTIONS),
        ] {
            let ran = count(cluster.node(i), &functions, "FINISHED");
            println!("node {i} ran {ran} tasks of the {what}");
            assert!(
                ran >= 1,
                "node {i} ran no task of the {what}: {:?}",
                tasks(cluster.node(i))
            );
        }
    }
}

#[test]
fn a_node_killed_in_the_middle_of_a_tree_reduce_leaves_its_result_exact() {
    // Node 1 (the driver's) has no accelerator: every task goes to node 2
    // or 3, four at a time each; those that fit neither at once queue on
    // one of them (the first one whose totals fit).
    let cluster = Cluster::with_api(3, &[&[], &FOUR, &FOUR]);
    let leaves = 16;
    let id = start_job(
        cluster.node(1),
        &["cluster_tree_reduce", &leaves.to_string(), "1000", "1000"],
    );
    let job_status = || success_stdout(&cluster.node(1).run(&["job", "status", &id]));
    // Kill the node that runs its second round of leaves: it has sent
    // results home and holds more.
    let victim = || {
        (2..=3).find(|&i| {
            let node = cluster.node(i);
            count(node, &["reduce_leaf"], "FINISHED") >= 1
                && count(node, &TREE_FUNCTIONS, "RUNNING") >= 1
        })
    };
    let mut chosen = None;
    wait_within(
        "a node to run a second round of leaves",
        Duration::from_secs(60),
        || {
            let status = job_status();
            assert!(
                !status.contains("FAILED") && !status.contains("SUCCEEDED"),
                "the job ended before the kill: {status}"
            );
            chosen = victim();
            chosen.is_some()
        },
    );
    let victim = chosen.expect("a victim");
    let survivor = 5 - victim;
    let finished_there = count(cluster.node(victim), &["reduce_leaf"], "FINISHED");
    cluster.kill(victim);

    let status = |s: &str| job_status().contains(s);
    wait_within("the job to end", Duration::from_secs(120), || {
        status("SUCCEEDED") || status("FAILED") || status("STOPPED")
    });
    assert!(status("SUCCEEDED"), "{}", job_status());
    let log = success_stdout(&cluster.node(1).run(&["job", "logs", &id]));
    let want = tree_closed_form(leaves, 1000);
    let got = line(&log, "tree_reduce len");
    assert!(
        got.starts_with(&want) && got.ends_with(" exact"),
        "{got}: want {want}.. exact"
    );

    let retried = cluster
        .node(1)
        .metric("wray_cluster_tasks_retried_total")
        .expect("the retry counter") as u64;
    // A leaf whose result had come home before the kill is not run again
    // (a result is copied to its owner before its task counts as finished:
    // nothing is rebuilt from lineage); one that finished there but whose
    // answer the kill cut off runs twice.
    let on_survivor = count(cluster.node(survivor), &["reduce_leaf"], "FINISHED");
    let twice = (on_survivor + finished_there).saturating_sub(leaves as usize);
    println!(
        "node {victim} killed after it finished {finished_there} leaves; tasks retried \
         elsewhere: {retried}; leaves run on node {survivor}: {on_survivor} of {leaves}; \
         finished leaves run again (reconstructed): {twice}"
    );
    assert!(retried >= 1, "{retried}");
}
