//! Attacks that crashed the host or corrupted its memory: sizes and
//! offsets past the store, counts that sized allocations, windows past the
//! kernel's mapping limit, values larger than the store.

use wray::ObjectRef;

use crate::raw::{self, mapping, objects, tasks, wit};
use crate::report;

/// Reserves objects of sizes no store can hold (`u64::MAX` and sizes that
/// wrapped to zero pages), then writes and seals past a real block.
#[wray::remote]
pub(crate) fn reserve_sizes() -> Result<String, String> {
    let sizes = [u64::MAX, u64::MAX - 4095, 1 << 63, 1 << 62];
    let refused = sizes
        .iter()
        .filter(|s| mapping::reserve(**s).is_err())
        .count();
    let id = mapping::reserve(4096).map_err(|e| raw::text(&e))?;
    let writes_refused = [
        mapping::write(id, u64::MAX - 1, &[1, 2, 3]),
        mapping::write(id, 4095, &[1, 2]),
        mapping::write(id, 1 << 40, &[1]),
    ]
    .iter()
    .filter(|r| r.is_err())
    .count();
    mapping::write(id, 0, &[7; 4096]).map_err(|e| raw::text(&e))?;
    let seals_refused = [
        mapping::seal(id, u64::MAX, wit::Codec::Raw, &[]),
        mapping::seal(id, 4097, wit::Codec::Raw, &[]),
    ]
    .iter()
    .filter(|r| r.is_err())
    .count();
    mapping::seal(id, 4096, wit::Codec::Raw, &[]).map_err(|e| raw::text(&e))?;
    let back = objects::get(&[id], None).map_err(|e| raw::text(&e))?;
    let intact = back[0].data.iter().all(|b| *b == 7) && back[0].data.len() == 4096;
    Ok(format!(
        "reserves refused {refused}/4, writes refused {writes_refused}/3, \
         seals refused {seals_refused}/2, sealed object intact {intact}"
    ))
}

/// `reserve_sizes`, with another object in the store that must not change.
pub(crate) fn reserve_sizes_scenario() {
    let other = wray::put(&vec![5u8; 1 << 20]);
    report("reserve_sizes", reserve_sizes.remote().get());
    let intact = other
        .get()
        .map(|v| v.iter().all(|b| *b == 5) && v.len() == 1 << 20);
    report("other object intact", intact);
}

/// Writes to and seals an object another task is making.
#[wray::remote]
pub(crate) fn foreign_writes(hi: u64, lo: u64, index: u32) -> String {
    let id = wit::ObjectId {
        task: wit::TaskId { hi, lo },
        index,
    };
    let write = mapping::write(id, 0, &[1; 16]);
    let seal = mapping::seal(id, 16, wit::Codec::Raw, &[]);
    format!(
        "write: {}, seal: {}",
        write.err().map_or("ok".into(), |e| raw::text(&e)),
        seal.err().map_or("ok".into(), |e| raw::text(&e))
    )
}

/// The driver reserves an object; a task tries to write and seal it; the
/// driver then finishes it itself.
pub(crate) fn foreign_writes_scenario() {
    let id = match mapping::reserve(64) {
        Ok(id) => id,
        Err(e) => return println!("foreign_writes: {}", raw::text(&e)),
    };
    let attempt = foreign_writes
        .remote(id.task.hi, id.task.lo, id.index)
        .get();
    report("foreign_writes", attempt);
    let own = mapping::write(id, 0, &[9; 64])
        .and_then(|()| mapping::seal(id, 64, wit::Codec::Raw, &[]))
        .and_then(|()| objects::get(&[id], None));
    println!(
        "own object: {}",
        own.map_or_else(|e| raw::text(&e), |v| format!("{:?}", &v[0].data[..4]))
    );
}

/// Submits with more returns than a task may have, and with none.
pub(crate) fn num_returns_scenario() {
    for n in [u32::MAX, 16_385, 0] {
        let ids = tasks::submit("ping0", &[], &raw::returns(n));
        let first = ids
            .first()
            .map(|id| ObjectRef::<i64>::from_id((*id).into()).get());
        match first {
            Some(r) => report(&format!("num_returns {n}: {} ids", ids.len()), r),
            None => println!("num_returns {n}: no ids"),
        }
    }
}

/// Maps one shared 4 KiB object over `n` one-page windows (32,000 reached
/// the kernel's mapping limit before windows were bounded).
#[wray::remote]
pub(crate) fn windows(n: u32) -> Result<String, String> {
    let id = raw::shared_object(4096, 3)?;
    let n = n as usize;
    let base = raw::grow(n / 16 + 1)?;
    let mut mapped = 0;
    let mut refused = None;
    for i in 0..n {
        match mapping::map(id, raw::window(base + i * 4096, 4096)) {
            Ok(_) => mapped += 1,
            Err(e) => {
                refused = Some(raw::text(&e));
                break;
            }
        }
    }
    // Still readable through the first window, then all unmapped.
    let first = raw::window(base, 1)[0];
    mapping::unmap(raw::window(base, n * 4096));
    let after = raw::window(base, 1)[0];
    Ok(format!(
        "mapped {mapped}, first byte {first} then {after}, then: {}",
        refused.unwrap_or_else(|| "nothing refused".into())
    ))
}

/// Maps objects `n` times over one buffer, as a guest reading objects one
/// after another does: each map replaces the last, so the window cap
/// (1,024) is never reached and the earlier objects are not pinned.
#[wray::remote]
pub(crate) fn remap(n: u32) -> Result<String, String> {
    let ids = [raw::shared_object(4096, 3)?, raw::shared_object(4096, 4)?];
    let base = raw::grow(1)?;
    let mut mapped = 0;
    for i in 0..n as usize {
        match mapping::map(ids[i % 2], raw::window(base, 4096)) {
            Ok(_) => mapped += 1,
            Err(e) => return Err(format!("map {i} refused: {}", raw::text(&e))),
        }
    }
    let last = raw::window(base, 1)[0];
    mapping::unmap(raw::window(base, 4096));
    Ok(format!(
        "mapped {mapped} of {n}, last byte {last} then {}",
        raw::window(base, 1)[0]
    ))
}

/// A value larger than the store (`mib` MiB) is spilled, and read back
/// (then held for `hold` seconds: a run to interrupt mid-flight); an object
/// reserved larger than the store is refused.
pub(crate) fn bigger_than_store_scenario(mib: u64, hold: u64) {
    let big = vec![9u8; (mib as usize) << 20];
    let r = wray::put(&big);
    report(
        "bigger_than_store",
        r.get().map(|v| format!("read back {}", v == big)),
    );
    let reserved = mapping::reserve((mib + 1) << 20);
    println!("reserve past the store: {}", raw::kind(&reserved));
    std::thread::sleep(std::time::Duration::from_secs(hold));
    drop(r);
}
