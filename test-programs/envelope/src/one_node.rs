//! The single-node dimensions of Ray's envelope (Ray's
//! `release/benchmarks/single_node/test_single_node.py`): many object
//! arguments, many returns, a large `get`, many queued tasks, one large
//! object.

use std::time::{Duration, Instant};

use serde_json::json;
use wray::ObjectRef;

use crate::barrier::{gate, Arrivals};
use crate::{arg, err, secs, Fields};

fn fields(v: serde_json::Value) -> Fields {
    v.as_object().cloned().unwrap_or_default()
}

/// The sum of the objects `refs` name, read with one `get_all`. Ray's
/// test passes 10,000 refs as separate arguments (`f.remote(*refs)`); a
/// wray function declares at most 1,024 parameters, so the refs travel in a
/// `Vec` and the task gets them.
#[wray::remote]
pub fn sum_refs(refs: Vec<ObjectRef<u64>>) -> Result<u64, String> {
    Ok(wray::get_all(&refs).map_err(err)?.iter().sum())
}

/// `args N`: N `put`s, then one task given all N refs.
pub(crate) fn args(a: &[String]) -> Result<Fields, String> {
    let n = arg(a, 0, "N")?;
    let start = Instant::now();
    let refs: Vec<_> = (0..n).map(|i| wray::put(&i)).collect();
    let put_s = secs(start);
    let sum = sum_refs.remote(refs).get().map_err(err)?;
    if sum != n * n.saturating_sub(1) / 2 {
        return Err(format!("sum of {n} args is {sum}"));
    }
    Ok(fields(
        json!({ "put_s": put_s, "passed": "refs in one Vec<ObjectRef<u64>>" }),
    ))
}

/// 100 objects: element i is i.
#[wray::remote(num_returns = 100)]
pub fn returns_100() -> Vec<u64> {
    (0..100).collect()
}

/// 3,000 objects (Ray's envelope): element i is i. (A function declaring
/// N returns puts N return schemas in its function-table record, which a
/// node bounds at 512 KiB: 3,000 and the rest of this guest fit, 1,024
/// more beside them do not, hence no other large count here.)
#[wray::remote(num_returns = 3000)]
pub fn returns_3000() -> Vec<u64> {
    (0..3000).collect()
}

/// `returns N`: one task returning N objects, all read. N is 100 or 3000
/// (the functions above); any other N submits `returns_3000` with
/// `num_returns = N` through the raw submission, which the node refuses
/// past its bound.
pub(crate) fn returns(a: &[String]) -> Result<Fields, String> {
    let n = arg(a, 0, "N")?;
    let refs: Vec<ObjectRef<u64>> = match n {
        100 => returns_100.remote(),
        3000 => returns_3000.remote(),
        _ => {
            let count = u32::try_from(n).map_err(err)?;
            let r = wray::__private::submit(
                None,
                "returns_3000",
                Vec::new(),
                count,
                wray::Format::Rkyv,
            );
            let refs: Vec<ObjectRef<u64>> = (0..n as usize).map(|i| r.nth(i)).collect();
            // A count the node refuses leaves one object, holding why.
            if let Some(first) = refs.first() {
                first.get().map_err(err)?;
            }
            refs
        }
    };
    let values = wray::get_all(&refs).map_err(err)?;
    if values.iter().copied().ne(0..n) {
        return Err(format!("{} values, not 0..{n}", values.len()));
    }
    Ok(fields(
        json!({ "declared": "num_returns = N on a fn returning Vec<u64>" }),
    ))
}

/// `get N`: N `put`s, then one `get_all` of them all.
pub(crate) fn get(a: &[String]) -> Result<Fields, String> {
    let n = arg(a, 0, "N")?;
    let start = Instant::now();
    let refs: Vec<_> = (0..n).map(|i| wray::put(&i)).collect();
    let put_s = secs(start);
    let t = Instant::now();
    let values = wray::get_all(&refs).map_err(err)?;
    let get_s = secs(t);
    if values.iter().copied().ne(0..n) {
        return Err("values out of order".into());
    }
    Ok(fields(json!({ "put_s": put_s, "get_s": get_s })))
}

/// `g + i`: a trivial task queued behind the object `g`.
#[wray::remote]
pub fn after(g: u64, i: u64) -> u64 {
    g + i
}

/// `queued N`: N tasks that depend on one object not made yet (the gate),
/// all submitted before it is, then the gate opened and all results read.
pub(crate) fn queued(a: &[String]) -> Result<Fields, String> {
    let n = arg(a, 0, "N")?;
    let start = Instant::now();
    let arrivals = Arrivals::remote();
    let open = gate.remote(arrivals.clone(), 1, 3_600_000);
    let refs: Vec<_> = (0..n).map(|i| after.remote(&open, i)).collect();
    let submit_s = secs(start);
    // Still closed: every task was queued at once.
    let (ready, _) = wray::wait(std::slice::from_ref(&open), 1, Some(Duration::ZERO));
    let closed_after_submit = ready.is_empty();
    arrivals.arrive().remote().get().map_err(err)?;
    let g = open.get().map_err(err)?;
    let values = wray::get_all(&refs).map_err(err)?;
    if values.iter().copied().ne((0..n).map(|i| i + g)) {
        return Err("results out of order".into());
    }
    Ok(fields(json!({
        "submit_s": submit_s,
        "submit_per_s": n as f64 / submit_s.max(1e-9),
        "all_queued_at_once": closed_after_submit,
    })))
}

/// The length of `r`, read in place (mapped), and the sum of a byte in
/// every 4 KiB page.
#[wray::remote]
pub fn mapped_len(r: ObjectRef<Vec<u8>>) -> Result<(u64, u64), String> {
    let m = r.map().map_err(err)?;
    let bytes = m.as_slice();
    let touched = bytes.iter().step_by(4096).map(|&b| u64::from(b)).sum();
    Ok((bytes.len() as u64, touched))
}

/// `large MIB`: one `Vec<u8>` of MIB MiB put by the driver, then read by a
/// task in place. A guest is wasm32: a `Vec` holds at most `isize::MAX`
/// bytes (2 GiB - 1), so a larger size fails here, before any allocation.
pub(crate) fn large(a: &[String]) -> Result<Fields, String> {
    let mib = arg(a, 0, "MIB")?;
    let len = usize::try_from(mib << 20)
        .ok()
        .filter(|&l| isize::try_from(l).is_ok())
        .ok_or_else(|| {
            format!(
                "{mib} MiB is past what one wasm32 Vec can hold ({} bytes, isize::MAX)",
                isize::MAX
            )
        })?;
    let start = Instant::now();
    let r = {
        let bytes = vec![1u8; len];
        wray::put(&bytes)
    };
    let put_s = secs(start);
    let (got, touched) = mapped_len.remote(r).get().map_err(err)?;
    if got != len as u64 || touched != (len as u64).div_ceil(4096) {
        return Err(format!("read {got} bytes ({touched} pages), put {len}"));
    }
    Ok(fields(json!({ "put_s": put_s, "bytes": len })))
}
