//! What one guest (or job) trusts of another: garbage and mistyped values,
//! forged errors and ids, another job's objects, actors and tasks, bogus
//! windows, writes into mapped objects, files outside the preopened
//! directory.

use std::time::Duration;

use crate::support::{attack, run_on_node};

#[test]
fn garbage_values_are_invalid_arguments_for_map_and_get_alike() {
    let out = attack(|_| {}, &["map_garbage"]);
    let both = "map Some(\"invalid-argument\") get Some(\"invalid-argument\")";
    out.expect("map_garbage: ok:", &[&format!("{both}; {both}")]);
}

#[test]
fn a_value_read_as_another_type_is_refused_naming_the_type() {
    let out = attack(|_| {}, &["wrong_type"]);
    out.expect(
        "wrong_type: ok: map: invalid-argument:",
        &[
            "written as another type, not as `alloc::vec::Vec<f64>`",
            "get: invalid-argument",
            "get as String: invalid-argument",
        ],
    );
}

#[test]
fn a_guest_error_cannot_claim_another_task_a_host_kind_or_causes_it_never_saw() {
    let out = attack(|_| {}, &["forged_error"]);
    out.expect(
        "forged_error: application in forged_error: out-of-memory: forged; its own task true; cut to 16 KiB true; 0 causes",
        &[],
    );
}

#[test]
fn forged_ids_read_as_ids_that_do_not_exist_on_every_import() {
    let out = attack(|_| {}, &["forged_ids"]);
    let same = "get not-found wait [true] stat not-found map not-found write invalid-argument \
                seal invalid-argument cancel false kill false call not-found arg not-found \
                ref not-found put not-found";
    out.expect("forged_ids: ok: foreign:", &[same]);
    out.expect("unknown:", &[same]);
}

#[test]
fn a_job_cannot_reach_another_jobs_objects_actors_or_tasks() {
    let out = run_on_node(
        |_| {},
        |node| {
            let holder = {
                let node = node.clone();
                std::thread::spawn(move || {
                    let args = vec!["cross_job_hold".to_string(), "4".to_string()];
                    node.run_main_blocking("hostile", &args)
                        .expect("runs")
                        .result
                })
            };
            // Wait for the holder to print its ids (the nodes' stdout is
            // one buffer), then steal from another job.
            let start = std::time::Instant::now();
            let held = loop {
                let text = node.config().stdio.stdout_text();
                if let Some(line) = text.lines().find(|l| l.starts_with("held ")) {
                    break line.to_string();
                }
                assert!(start.elapsed() < Duration::from_secs(30), "no ids: {text}");
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut args = vec!["cross_job_steal".to_string()];
            args.extend(held.split_whitespace().skip(1).map(str::to_string));
            let stolen = node.run_main_blocking("hostile", &args).expect("runs");
            assert_eq!(stolen.result, Ok(()));
            assert_eq!(holder.join().expect("holder"), Ok(()));
        },
        &["cross_job"],
    );
    for what in ["object", "small object"] {
        out.expect(
            &format!("steal {what}: get not-found:"),
            &[
                "does not exist on node",
                "stat not-found map not-found wait [true]",
            ],
        );
    }
    out.expect("steal actor: call not-found:", &["no actor", "kill false"]);
    out.expect("steal task: cancel false", &[]);
    out.expect("steal as argument: not-found:", &["does not exist on node"]);
    // The holder's things were untouched by all of it.
    out.expect("still mine: ok: true Some(7)", &[]);
    out.expect("my actor: ok: 5", &[]);
    out.expect("my task: ok:", &[]);
    out.expect("next: ok: 42", &[]);
}

#[test]
fn bogus_windows_are_refused_and_overlapping_ones_cleaned_up() {
    let out = attack(|_| {}, &["bogus_windows"]);
    out.expect(
        "bogus_windows: ok: misaligned invalid-argument, empty invalid-argument, \
         too small invalid-argument, module data invalid-argument, overlapping ok ok ok, \
         sealed ok, clean after unmap true",
        &[],
    );
}

#[test]
fn a_write_into_a_mapped_object_stays_in_its_instance() {
    let out = attack(|_| {}, &["private_writes"]);
    out.expect(
        "private_writes: ok: mine 99, another task's 1, the store's 1",
        &[],
    );
}

#[test]
fn files_outside_the_preopened_directory_cannot_be_read() {
    let root = tempfile::tempdir().expect("tempdir");
    let inside = root.path().join("inside");
    std::fs::create_dir(&inside).expect("mkdir");
    std::fs::write(inside.join("inside.txt"), "hi").expect("write");
    std::fs::write(root.path().join("outside.txt"), "secret").expect("write");
    std::os::unix::fs::symlink(root.path(), inside.join("link")).expect("symlink");
    std::os::unix::fs::symlink("/etc/passwd", inside.join("abs_link")).expect("symlink");
    let preopen = wray_host::Preopen {
        host: inside.clone(),
        guest: "/data".into(),
    };
    let out = attack(
        move |c| c.preopens = vec![preopen],
        &["dir_escapes", "/data"],
    );
    out.expect(
        "dir_escapes: ok: inside.txt true, outside.txt false, passwd false, \
         outside.txt false, abs_link false",
        &[],
    );
}
