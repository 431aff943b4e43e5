//! The fuzzing guest (`test-programs/fuzz`) on a few seeds: random calls of
//! every import with real, forged and foreign ids and sizes up to
//! `u64::MAX`. Whatever each call returns, the node must survive, run the
//! next task and give everything back. `cargo xtask fuzz --calls N` runs
//! the same guest long.

use std::sync::Arc;

use crate::support::run_on_node;

#[test]
fn random_calls_of_every_import_never_hurt_the_node() {
    let out = run_on_node(
        |_| {},
        |node: &Arc<wray_host::Node>| {
            let fuzz = node
                .deploy_file_blocking(crate::support::component("fuzz"))
                .expect("deploys");
            let args: Vec<String> = ["3", "20000"].iter().map(|s| s.to_string()).collect();
            let outcome = node.run_main_blocking(&fuzz.name, &args).expect("runs");
            assert_eq!(outcome.result, Ok(()));
        },
        &["fuzz", "3 seeds"],
    );
    out.expect("total: 60000 calls,", &["0 seeds stopped"]);
    out.expect("next: ok: 42", &[]);
}
