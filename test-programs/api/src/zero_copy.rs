//! Zero-copy objects: large values built in shared memory and mapped into
//! guests; a guest's write into a mapped object stays private.

use wray::ObjectRef;

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().map(|b| u64::from(*b)).sum()
}

/// Maps the object and sums its bytes, in a task of its own.
#[wray::remote]
pub(crate) fn mapped_checksum(r: ObjectRef<Vec<u8>>) -> Result<u64, String> {
    let m = r.map().map_err(|e| e.to_string())?;
    Ok(checksum(m.as_slice()))
}

/// `zero_copy`: an 8 MiB put, mapped twice, read by `get`, scribbled on
/// through the mapping, then mapped by another task (which must see the
/// original); the same value built in place; a 16 MiB task result mapped
/// too.
pub(crate) fn zero_copy() -> wray::Result<()> {
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    let expected = checksum(&data);
    let r = wray::put(&data);
    {
        let m = r.map()?;
        println!("mapped {} {}", m.len(), checksum(m.as_slice()) == expected);
    }
    let m = r.map()?;
    println!("remapped {}", checksum(m.as_slice()) == expected);
    println!("get {}", r.get()? == data);
    // Scribble over the mapped object: copy-on-write keeps it private.
    let first = m.as_slice().as_ptr() as *mut u8;
    // SAFETY: the window is this instance's own memory, mapped writable
    // (private); this is exactly the write the store must contain.
    unsafe { first.write_volatile(first.read_volatile().wrapping_add(1)) };
    println!("scribbled {}", checksum(m.as_slice()) == expected + 1);
    let other = mapped_checksum.remote(vec![r.clone()].remove(0)).get()?;
    println!("private {}", other == expected);
    drop(m);
    // Built in place: serialized straight into the object's shared pages.
    let built = wray::put_in_place(&data);
    let via_map = checksum(built.map()?.as_slice()) == expected;
    println!("in place {} {}", via_map, built.get()? == data);
    let result = crate::refs::big.remote(3).map()?;
    println!("result {} {}", result.len(), result[0]);
    // A large value holding a ref, streamed into the store: the ref inside
    // keeps its object alive once the outer value is all that holds it.
    let inner = wray::put(&7u64);
    let outer = wray::put(&(vec![1u8; 200 << 10], inner.clone()));
    drop(inner);
    let (bytes, back) = outer.get()?;
    println!("streamed {} {}", bytes.len(), back.get()?);
    // A mapped Vec<f64> reads as a plain &[f64].
    let floats = wray::put(&vec![1.5f64; 20_000]);
    let m = floats.map()?;
    let slice: &[f64] = m.as_slice();
    println!("floats {} {}", slice.len(), slice.iter().sum::<f64>());
    Ok(())
}

/// Grows this fresh instance's memory by `mib` MiB and checks the new pages
/// are all zero (an earlier task's mapped object must never show through).
#[wray::remote]
pub(crate) fn fresh_pages_are_zero(mib: u32) -> bool {
    let pages = (mib as usize) << 4; // 64 KiB wasm pages
    let old = core::arch::wasm32::memory_grow(0, pages);
    if old == usize::MAX {
        return false;
    }
    let start = old * 65536;
    // SAFETY: the pages were just added to this instance's memory and
    // nothing else uses them.
    let fresh = unsafe { core::slice::from_raw_parts(start as *const u8, pages * 65536) };
    fresh.iter().all(|b| *b == 0)
}

/// `window_leak`: tasks that map an object alternate with fresh tasks that
/// read the pages where the windows were (run on one CPU, so instances reuse
/// the same pooling slot).
pub(crate) fn window_leak() -> wray::Result<()> {
    let data = vec![0xA5u8; 4 << 20];
    let r = wray::put(&data);
    let mut clean = true;
    for _ in 0..20 {
        mapped_checksum.remote(vec![r.clone()].remove(0)).get()?;
        clean &= fresh_pages_are_zero.remote(16).get()?;
    }
    println!("fresh pages zero {clean}");
    Ok(())
}

/// `hold_mapped`: maps a 1 MiB object and keeps it mapped for 1.5 s (the
/// host test looks for the mapping in /proc/self/maps meanwhile).
pub(crate) fn hold_mapped() -> wray::Result<()> {
    let r = wray::put(&vec![1u8; 1 << 20]);
    let m = r.map()?;
    std::thread::sleep(std::time::Duration::from_millis(1500));
    println!("held {}", m.len());
    Ok(())
}

/// Allocates `mib` MiB of `0xA5`, frees it, then `vec![0u8; mib MiB]`
/// (which [`wray::ZeroPages`] has the host zero, by pages from 2 MiB up,
/// in the memory just freed), four times, writing the zeroed vector each
/// time; returns how many of its bytes were not zero, in all.
#[wray::remote]
pub(crate) fn zeroed_allocations(mib: u32) -> u64 {
    let len = (mib as usize) << 20;
    let mut nonzero = 0;
    for round in 1..=4u8 {
        drop(std::hint::black_box(vec![0xA5u8; len]));
        let mut zeros = vec![0u8; len];
        nonzero += zeros.iter().filter(|b| **b != 0).count() as u64;
        zeros.fill(round);
        std::hint::black_box(&zeros);
    }
    nonzero
}

/// `zeroed`: large and small zeroed allocations over dirty memory are all
/// zero, and the fresh instances after them see zero pages where those
/// were (run on one CPU, so instances reuse the same pooling slot).
pub(crate) fn zeroed() -> wray::Result<()> {
    let mut clean = true;
    for mib in [1, 2, 3, 8, 33] {
        let nonzero = zeroed_allocations.remote(mib).get()?;
        println!("zeroed {mib} MiB: {nonzero} bytes not zero");
        clean &= fresh_pages_are_zero.remote(64).get()?;
    }
    println!("fresh pages zero {clean}");
    Ok(())
}
