//! Attacks on what one guest trusts of another, and on the host's own
//! checks: garbage and mistyped values, forged errors and ids, another
//! job's objects, actors and tasks, bogus and overlapping windows, writes
//! into mapped objects, files outside the preopened directory.

use wray::ObjectRef;

use crate::raw::{self, mapping, objects, tasks, wit};
use crate::report;

/// Kinds of `map` and `get` of an object holding garbage, read as
/// `Vec<u64>`: small (copied into the window) and large (mapped).
#[wray::remote]
pub(crate) fn map_garbage() -> String {
    let small = objects::put(&raw::payload(wit::Codec::Rkyv, vec![0xff; 200], vec![]));
    let large = mapping::put_bytes(&vec![0xee; 300 << 10], wit::Codec::Rkyv, &[]);
    [small, large]
        .iter()
        .map(|id| {
            let r = ObjectRef::<Vec<u64>>::from_id((*id).into());
            let map = r.map().err().map(|e| e.kind().to_string());
            let get = r.get().err().map(|e| e.kind().to_string());
            format!("map {map:?} get {get:?}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A `Vec<u8>` read as a `Vec<f64>` and as a `String`.
#[wray::remote]
pub(crate) fn wrong_type() -> String {
    let bytes = wray::put(&vec![1u8; 300 << 10]);
    let as_floats = ObjectRef::<Vec<f64>>::from_id(bytes.id());
    let as_text = ObjectRef::<String>::from_id(bytes.id());
    let outcome = |r: wray::Result<usize>| match r {
        Ok(n) => format!("read {n}"),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    };
    format!(
        "map: {}; get: {}; get as String: {}",
        outcome(as_floats.map().map(|m| m.len())),
        outcome(as_floats.get().map(|v| v.len())),
        outcome(as_text.get().map(|s| s.len())),
    )
}

/// A remote function written by hand that returns an error claiming
/// another task, another function, a kind only the host may give, a
/// message of 1 MiB and 10,000 causes it never saw.
pub(crate) struct ForgedError;

impl wray::__private::RemoteFunction for ForgedError {
    const NAME: &'static str = "forged_error";
    const NUM_RETURNS: u32 = 1;
    const PARAMS: &'static [wray::__private::ParamSchema] = &[];
    const RETURNS: &'static [wray::__private::SchemaFn] = &[wray::__private::schema_of::<u64>];

    fn invoke(
        _args: Vec<wit::Arg>,
        _codec: wit::Codec,
    ) -> Result<Vec<wit::Payload>, wit::TaskError> {
        Err(wit::TaskError {
            kind: wit::ErrorKind::OutOfMemory,
            function: "someone_else".into(),
            task: wit::TaskId { hi: 1, lo: 2 },
            message: format!("forged{}", " ".repeat(1 << 20)),
            causes: (0..10_000)
                .map(|lo| wit::ErrorCause {
                    kind: wit::ErrorKind::Timeout,
                    function: "elsewhere".into(),
                    task: wit::TaskId { hi: 1, lo },
                    message: "forged cause".into(),
                })
                .collect(),
        })
    }
}

/// Calls [`ForgedError`]: the error must name the real task and function.
pub(crate) fn forged_error_scenario() {
    let ids = tasks::submit("forged_error", &[], &raw::returns(1));
    let Some(id) = ids.first() else {
        return println!("forged_error: no ids");
    };
    let r = ObjectRef::<u64>::from_id((*id).into());
    match r.get() {
        Ok(v) => println!("forged_error: ok {v}"),
        Err(e) => println!(
            "forged_error: {} in {}: {}; its own task {}; cut to 16 KiB {}; {} causes",
            e.kind(),
            e.function(),
            e.message()
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" "),
            e.task() == r.id().task,
            e.message().len() < (16 << 10) + 64 && e.message().ends_with(" bytes cut)"),
            e.causes().len(),
        ),
    }
}

/// Every import that takes an id, given ids that name nothing or another
/// job's objects.
#[wray::remote]
pub(crate) fn forged_ids() -> String {
    let mut out = Vec::new();
    for (label, id) in [
        ("foreign", raw::foreign_id(1)),
        ("unknown", raw::unknown_id_of_my_job(1)),
    ] {
        let get = objects::get(&[id], Some(1000));
        let wait = objects::wait(&[id], 1, Some(1000));
        objects::release(&[id]);
        let stat = mapping::stat(id);
        let window = raw::grow(1).map(|at| raw::window(at, raw::WASM_PAGE));
        let map = window.map(|w| mapping::map(id, w));
        let write = mapping::write(id, 0, &[1]);
        let seal = mapping::seal(id, 0, wit::Codec::Raw, &[]);
        let cancel = tasks::cancel(id, true, true);
        let kill = tasks::kill_actor(id.task);
        let call = tasks::call_actor(id.task, "read", &[], &raw::returns(1));
        let call = objects::get(&call, None);
        let arg = tasks::submit("ping", &[wit::Arg::Object(id)], &raw::returns(1));
        let arg = objects::get(&arg, None);
        let inside = raw::payload(wit::Codec::Raw, vec![], vec![id]);
        let by_ref = tasks::submit("ping", &[wit::Arg::Value(inside.clone())], &raw::returns(1));
        let by_ref = objects::get(&by_ref, None);
        let put = objects::put(&inside);
        let put = objects::get(&[put], None);
        out.push(format!(
            "{label}: get {} wait {wait:?} stat {} map {} write {} seal {} cancel {cancel} \
             kill {kill} call {} arg {} ref {} put {}",
            raw::kind(&get),
            raw::kind(&stat),
            map.map_or_else(|e| e, |m| raw::kind(&m)),
            raw::kind(&write),
            raw::kind(&seal),
            raw::kind(&call),
            raw::kind(&arg),
            raw::kind(&by_ref),
            raw::kind(&put),
        ));
    }
    out.join("\n")
}

/// Holds an object, an actor and a sleeping task for `secs` seconds and
/// prints their ids, for another job to try to reach.
pub(crate) fn cross_job_hold_scenario(secs: u64) {
    let obj = wray::put(&vec![3u8; 300 << 10]);
    let small = wray::put(&7u64);
    let actor = crate::leaks::Cell::remote(5u64);
    let sleeper = crate::hangs::sleep_for.remote(secs * 1000);
    println!(
        "held {} {} {} {}",
        obj.id(),
        small.id(),
        actor.id(),
        sleeper.id()
    );
    std::thread::sleep(std::time::Duration::from_secs(secs));
    let intact = obj.get().map(|v| v.iter().all(|b| *b == 3));
    report(
        "still mine",
        intact.map(|ok| format!("{ok} {:?}", small.get().ok())),
    );
    report("my actor", actor.read().remote().get());
    report("my task", sleeper.get());
}

/// Parses 40 hex digits into an object id.
fn parse_object(text: &str) -> Option<wit::ObjectId> {
    let hi = u64::from_str_radix(text.get(..16)?, 16).ok()?;
    let lo = u64::from_str_radix(text.get(16..32)?, 16).ok()?;
    let index = u32::from_str_radix(text.get(32..40)?, 16).ok()?;
    Some(wit::ObjectId {
        task: wit::TaskId { hi, lo },
        index,
    })
}

/// Tries to reach the object, actor and task of another job (their ids
/// as `cross_job_hold` printed them).
pub(crate) fn cross_job_steal_scenario(ids: &[String]) {
    let at = |i: usize| ids.get(i).and_then(|t| parse_object(t));
    let actor_id = ids
        .get(2)
        .and_then(|t| parse_object(&format!("{t}00000000")));
    let (Some(obj), Some(small), Some(actor), Some(task)) = (at(0), at(1), actor_id, at(3)) else {
        return println!("cross_job_steal: bad ids {ids:?}");
    };
    for (label, id) in [("object", obj), ("small object", small)] {
        let get = objects::get(&[id], Some(100));
        let stat = mapping::stat(id);
        let map = raw::grow(8).map(|at| mapping::map(id, raw::window(at, 8 * raw::WASM_PAGE)));
        let wait = objects::wait(&[id], 1, Some(100));
        println!(
            "steal {label}: get {} stat {} map {} wait {wait:?}",
            get.err().map_or("read it!".into(), |e| raw::text(&e)),
            raw::kind(&stat),
            map.map_or_else(|e| e, |m| raw::kind(&m)),
        );
    }
    objects::release(&[obj]);
    let call = tasks::call_actor(actor.task, "read", &[], &raw::returns(1));
    let call = objects::get(&call, None);
    println!(
        "steal actor: call {} kill {}",
        call.err().map_or("called it!".into(), |e| raw::text(&e)),
        tasks::kill_actor(actor.task)
    );
    println!("steal task: cancel {}", tasks::cancel(task, true, true));
    let arg = tasks::submit("ping", &[wit::Arg::Object(obj)], &raw::returns(1));
    println!(
        "steal as argument: {}",
        objects::get(&arg, None)
            .err()
            .map_or("passed it!".into(), |e| raw::text(&e))
    );
}

/// Windows the host must refuse (misaligned, empty, too small, over the
/// module's own data) and overlapping ones it must clean up.
#[wray::remote]
pub(crate) fn bogus_windows() -> Result<String, String> {
    let id = raw::shared_object(8192, 4)?;
    let base = raw::grow(4)?;
    let cases = [
        ("misaligned", raw::window(base + 1, 8192)),
        ("empty", raw::window(base, 0)),
        ("too small", raw::window(base, 4096)),
        ("module data", raw::window(0, 8192)),
    ];
    let mut out: Vec<String> = cases
        .iter()
        .map(|(label, w)| format!("{label} {}", raw::kind(&mapping::map(id, w))))
        .collect();
    // Overlapping windows: both map, the last one shows.
    let a = mapping::map(id, raw::window(base, 8192));
    let b = mapping::map(id, raw::window(base + 4096, 8192));
    let create = mapping::create(8192, raw::window(base + 8192, 8192));
    out.push(format!(
        "overlapping {} {} {}",
        raw::kind(&a),
        raw::kind(&b),
        raw::kind(&create)
    ));
    if let Ok(made) = create {
        // Sealing unmaps the create window: the overlapping read window
        // below it is unmapped by `unmap`.
        let sealed = mapping::seal(made, 8192, wit::Codec::Raw, &[]);
        out.push(format!("sealed {}", raw::kind(&sealed)));
    }
    mapping::unmap(raw::window(base, 4 * raw::WASM_PAGE));
    let clean = raw::window(base, 4 * raw::WASM_PAGE)
        .iter()
        .all(|b| *b == 0);
    out.push(format!("clean after unmap {clean}"));
    Ok(out.join(", "))
}

/// Maps `r` and returns its first byte (another task's view).
#[wray::remote]
pub(crate) fn read_mapped(r: ObjectRef<Vec<u8>>) -> Result<u8, wray::Error> {
    let m = r.map()?;
    Ok(m.as_slice()[0])
}

/// Writes into a mapped object: the write stays in this instance.
pub(crate) fn private_writes_scenario() -> wray::Result<String> {
    let r = wray::put(&vec![1u8; 300 << 10]);
    let m = r.map()?;
    let first = m.as_slice().as_ptr() as *mut u8;
    // SAFETY: the window is this instance's own (private) memory; this is
    // exactly the write the store must keep to itself.
    unsafe { first.write_volatile(99) };
    let mine = m.as_slice()[0];
    let theirs = read_mapped.remote(r.clone()).get()?;
    let stored = r.get()?[0];
    Ok(format!(
        "mine {mine}, another task's {theirs}, the store's {stored}"
    ))
}

/// Tries to read files outside the preopened directory `dir`: through
/// `..`, an absolute path, and a symlink inside it pointing out.
#[wray::remote]
pub(crate) fn dir_escapes(dir: String) -> String {
    let tries = [
        format!("{dir}/inside.txt"),
        format!("{dir}/../outside.txt"),
        "/etc/passwd".to_string(),
        format!("{dir}/link/outside.txt"),
        format!("{dir}/abs_link"),
    ];
    tries
        .iter()
        .map(|p| {
            let r = std::fs::read_to_string(p);
            format!("{} {}", p.rsplit('/').next().unwrap_or(p), r.is_ok())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
