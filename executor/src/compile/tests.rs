use super::*;

#[path = "../../../host/tests/common/synth.rs"]
#[allow(unreachable_pub)]
mod synth;

use synth::{component, DRIVER, FUNCTIONS, METADATA};

const MIB: u64 = 1 << 20;

fn reason(bytes: &[u8], max_code: u64) -> String {
    match inspect("x", bytes, max_code) {
        Err(Error::Component { reason, .. }) => reason,
        other => panic!("refused as a component, got {other:?}"),
    }
}

#[test]
fn a_component_exporting_no_wray_part_is_refused_saying_what_it_lacks() {
    let none = reason(&component(4096, &[], &[]), MIB);
    assert!(
        none.contains(&format!("it exports none of `{FUNCTIONS}`"))
            && none.contains("(it exports nothing)"),
        "{none}"
    );
    let other = reason(&component(4096, &[], &["my:pkg/thing@1.0.0"]), MIB);
    assert!(
        other.contains("(it exports `my:pkg/thing@1.0.0`)"),
        "{other}"
    );
    let bare = reason(&component(0, &[], &[FUNCTIONS]), MIB);
    assert!(bare.contains(&format!("but not `{METADATA}`")), "{bare}");
}

#[test]
fn imports_other_than_wasi_and_wray_are_refused_naming_them() {
    let bytes = component(0, &["wasi:cli/stdout@0.2.0", "acme:db/query"], &[DRIVER]);
    let why = reason(&bytes, MIB);
    assert!(
        why.contains("it imports instance `acme:db/query`, which no wray node provides"),
        "{why}"
    );
    let fine = component(
        0,
        &["wasi:cli/stdout@0.2.0", "wray:runtime/objects@0.1.0"],
        &[DRIVER],
    );
    inspect("x", &fine, MIB).unwrap();
}

#[test]
fn code_past_the_bound_is_refused_before_compiling() {
    let bytes = component(3 << 20, &[], &[FUNCTIONS, METADATA]);
    let shape = inspect("x", &bytes, 4 * MIB).unwrap();
    assert!(shape.code_bytes >= 3 << 20, "{}", shape.code_bytes);
    assert_eq!(
        shape.exports,
        vec![FUNCTIONS.to_string(), METADATA.to_string()]
    );
    let why = reason(&bytes, MIB);
    assert!(
        why.contains("more than the 1048576 one component may have (--max-code-mib 1)"),
        "{why}"
    );
}

#[test]
fn truncated_and_foreign_bytes_are_refused_as_such() {
    let bytes = component(4096, &[], &[DRIVER]);
    let why = reason(&bytes[..bytes.len() / 2], MIB);
    assert!(why.starts_with("not a valid component"), "{why}");
    let why = reason(b"\x7fELF\x02\x01\x01\0", MIB);
    assert!(why.contains("not a wasm component"), "{why}");
}

#[test]
fn the_examples_and_fixtures_pass_the_cheap_checks() {
    // Every staged guest, when they are built (`cargo xtask build-guests`).
    let Some(dir) = std::env::var_os("WRAY_WASM_DIR") else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wasm") {
            let bytes = std::fs::read(&path).unwrap();
            if let Err(e) = inspect("x", &bytes, crate::config::DEFAULT_MAX_CODE_BYTES) {
                panic!("{}: {e}", path.display());
            }
            seen += 1;
        }
    }
    assert!(seen > 0, "no guest staged");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn the_pool_runs_at_most_its_slots_and_gives_up_past_the_limit() {
    let rt = runtime();
    let pool = Arc::new(CompilePool::new(1));
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    // A compile that runs until told to stop: past its limit, given up on,
    // still in its slot.
    let long = rt.block_on(pool.run(
        Duration::from_secs(60),
        Duration::from_millis(50),
        move |_| {
            let _ = started_tx.send(());
            let _ = held.recv();
            1
        },
    ));
    assert_eq!(
        long,
        Err(NotCompiled::TimedOut {
            limit: Duration::from_millis(50)
        })
    );
    started.recv().unwrap();
    assert_eq!(pool.stats().running, 1, "its thread still runs");
    // Its slot is still taken: the next compile waits, then gives up.
    let busy = rt.block_on(pool.run(Duration::from_millis(50), Duration::from_secs(60), |_| 2));
    assert!(
        matches!(busy, Err(NotCompiled::Busy { slots: 1, .. })),
        "{busy:?}"
    );
    release.send(()).unwrap();
    // Once it ends, the slot is free again: a compile waiting for it runs.
    let next = rt.block_on(pool.run(Duration::from_secs(600), Duration::from_secs(60), |_| 3));
    assert_eq!(next, Ok(3));
    let stats = pool.stats();
    assert_eq!(
        (stats.started, stats.timed_out, stats.peak_running),
        (2, 1, 1)
    );
    assert_eq!(stats.running, 0);
}

#[test]
fn a_panicking_compile_fails_its_deploy_only() {
    let rt = runtime();
    let pool = CompilePool::new(2);
    let failed = rt.block_on(
        pool.run(Duration::from_secs(1), Duration::from_secs(60), |_| {
            panic!("cranelift fell over")
        }),
    );
    let Err(NotCompiled::Failed(message)) = failed else {
        panic!("{failed:?}");
    };
    assert!(message.contains("cranelift fell over"), "{message}");
    let ok = rt.block_on(pool.run(Duration::from_secs(1), Duration::from_secs(60), |_| 4));
    assert_eq!(ok, Ok(4));
}
