//! wray's own cases, beside Ray's: what reading an object costs a guest.
//!
//! - "single client get gigabytes": the driver maps a 1 GiB `Vec<u8>`
//!   (zero-copy, [`ObjectRef::map`]) and reads every byte of it (sums it
//!   as 64-bit words, so that the sum, not the get, is not what bounds the
//!   rate), in Ray's GB per second.
//! - "guest get latency <size>": the mean time of one zero-copy get (map,
//!   then unmap) of an existing `Vec<u8>` of 4 KiB, 1 MiB, 64 MiB or 1 GiB,
//!   in microseconds. Objects under 100 KiB live on the host's heap and are
//!   copied into the window instead.

use std::hint::black_box;

use wray::ObjectRef;

use crate::suite::{err, Ctx, RAY_GB};
use wray_timeit::{timeit, Stat};

/// A `Vec<u8>` of `len` ones, put by a task (so the driver's memory holds
/// only what its `get`s bring in). The task returns a ref to the object
/// rather than the value, so the bytes go through `put` (serialized once,
/// in place) and not through a task's return path.
#[wray::remote]
pub fn make_bytes(len: u64) -> ObjectRef<Vec<u8>> {
    wray::put(&vec![1u8; len as usize])
}

/// The length, first and last byte of `bytes`, an object argument passed
/// by value: the task decodes the object into a `Vec<u8>` (what "an
/// argument passed by value" costs).
#[wray::remote]
pub fn bytes_len(bytes: Vec<u8>) -> (u64, u8, u8) {
    let end = |b: Option<&u8>| b.copied().unwrap_or_default();
    (bytes.len() as u64, end(bytes.first()), end(bytes.last()))
}

/// The length of `r`, read through the zero-copy route: mapped, then
/// copied into a `Vec<u8>` as [`bytes_len`]'s argument is decoded.
#[wray::remote]
pub fn mapped_len(r: ObjectRef<Vec<u8>>) -> Result<u64, String> {
    let mapped = r.map().map_err(err)?;
    Ok(black_box(mapped.to_vec()).len() as u64)
}

/// `main(["big_arg", MIB..])`: for each size, one task taking a `Vec<u8>`
/// object of that many MiB by value, then one mapping it; prints
/// `big_arg <MiB> by_value_s <s> mapped_s <s>` (wall time seen by the
/// driver, the better of two runs each, the object made beforehand).
pub fn big_arg(sizes: &[String]) -> Result<(), String> {
    for mib in sizes {
        let mib: u64 = mib.parse().map_err(|e| format!("MiB `{mib}`: {e}"))?;
        let len = mib << 20;
        let obj = bytes_object(len)?;
        // Alternated, and each the better of two runs: the first touch of
        // a fresh instance slot's pages costs more than later ones.
        let (mut by_value_s, mut mapped_s) = (f64::MAX, f64::MAX);
        let (mut by_value, mut mapped) = ((0, 0, 0), 0);
        for _ in 0..2 {
            let start = std::time::Instant::now();
            by_value = bytes_len.remote(&obj).get().map_err(err)?;
            by_value_s = by_value_s.min(start.elapsed().as_secs_f64());
            let start = std::time::Instant::now();
            mapped = mapped_len.remote(obj.clone()).get().map_err(err)?;
            mapped_s = mapped_s.min(start.elapsed().as_secs_f64());
        }
        if by_value != (len, 1, 1) || mapped != len {
            return Err(format!(
                "read {by_value:?} and {mapped} bytes, expected ({len}, 1, 1) and {len}"
            ));
        }
        println!("big_arg {mib} by_value_s {by_value_s:.3} mapped_s {mapped_s:.3}");
    }
    Ok(())
}

/// The object [`make_bytes`]`(len)` made.
fn bytes_object(len: u64) -> Result<ObjectRef<Vec<u8>>, String> {
    make_bytes.remote(len).get().map_err(err)
}

/// "single client get gigabytes"
pub fn get_gigabytes(cx: &Ctx) -> Result<Stat, String> {
    const LEN: u64 = 1 << 30;
    let obj = bytes_object(LEN)?;
    Ok(timeit(cx.scale, || {
        let mapped = obj.map().map_err(err)?;
        let bytes = mapped.as_slice();
        let sum = bytes
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
            .fold(0u64, u64::wrapping_add);
        let expected = (LEN / 8).wrapping_mul(0x0101_0101_0101_0101);
        if bytes.len() as u64 != LEN || sum != expected {
            return Err(format!(
                "read back {} bytes summing to {sum:#x}, expected {LEN} summing to {expected:#x}",
                bytes.len()
            ));
        }
        Ok(())
    })?
    .rate(LEN as f64 / RAY_GB))
}

/// "guest get latency <size>" for an object of `len` bytes.
pub fn get_latency(cx: &Ctx, len: u64) -> Result<Stat, String> {
    let obj = bytes_object(len)?;
    Ok(timeit(cx.scale, || {
        let mapped = obj.map().map_err(err)?;
        black_box(mapped.len());
        Ok::<(), String>(())
    })?
    .latency_us())
}
