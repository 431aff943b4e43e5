//! Host memory and tables a guest could grow without bound: profile spans,
//! timed-out waits, inline objects, live actors, objects naming themselves;
//! a dying actor's teardown, and a host bug in one task.

use crate::support::attack;

#[test]
fn profile_spans_are_bounded_per_task() {
    let out = attack(|_| {}, &["spans", "3000000"]);
    out.expect("spans: ok: opened 3000000, kept 10000", &[]);
    // 3 M kept spans took 13.4 GiB before they were bounded.
    assert!(
        out.rss_growth_kib < 512 << 10,
        "grew {} KiB",
        out.rss_growth_kib
    );
}

#[test]
fn timed_out_waits_leave_no_waiter_behind() {
    let out = attack(|_| {}, &["wait_polls", "200000"]);
    out.expect("wait_polls: 200000 polls, ready 0", &[]);
    // Each kept waiter cost about 4 KiB before they were taken back.
    assert!(
        out.rss_growth_kib < 256 << 10,
        "grew {} KiB",
        out.rss_growth_kib
    );
}

#[test]
fn inline_objects_count_against_the_store_and_fail_when_it_is_full() {
    let out = attack(|_| {}, &["inline_flood", "20000", "102300"]);
    out.expect("inline_flood first: ok: 102300", &[]);
    out.expect("inline_flood last: system: object store full", &[]);
    // 20,000 inline objects took 1.96 GiB of heap with a 64 MiB store.
    assert!(
        out.rss_growth_kib < 768 << 10,
        "grew {} KiB",
        out.rss_growth_kib
    );
}

#[test]
fn actors_past_the_limit_fail_clearly_and_tasks_keep_running() {
    let out = attack(|_| {}, &["actor_flood", "300"]);
    out.expect("actor_flood: 192 live, 108 refused", &[]);
    out.expect(
        "actor_flood refused: actor-died:",
        &["the node has 192 live actors, the most it allows"],
    );
    out.expect("plain task: ok: 42", &[]);
}

#[test]
fn objects_cannot_hold_themselves_or_unsealed_siblings() {
    let out = attack(|_| {}, &["self_refs"]);
    out.expect(
        "self_refs: ok: itself: invalid-argument:",
        &[
            "the task is still making it",
            "unsealed sibling: invalid-argument",
            "sealed sibling: ok",
            "put naming itself: true not-found",
        ],
    );
}

#[test]
fn killing_an_actor_whose_teardown_wakes_its_own_queue_does_not_deadlock() {
    let out = attack(|_| {}, &["actor_death"]);
    out.expect("actor_death: killed true", &[]);
    out.expect("actor_death call: actor-died:", &["killed by main"]);
    out.expect("actor_death object:", &[]);
}

#[test]
fn a_host_bug_in_one_task_fails_that_task_only() {
    // With RUST_BACKTRACE set, the fail point's panic symbolizes a backtrace,
    // and std keeps the binary's debug info it read for that (about 180 MB
    // of RSS here) for the rest of the process. Symbolize one before the
    // attack's "before" is measured, so that cache is not counted as a leak
    // (under the serial lock, or it lands in another test's measurement).
    crate::support::symbolize_a_backtrace();
    let out = attack(
        |c| c.fail_point = Some("boom_point".into()),
        &["fail_point"],
    );
    out.expect(
        "fail_point: system: the host failed while running the task (a bug in wray)",
        &["fail point `boom_point` reached"],
    );
}
