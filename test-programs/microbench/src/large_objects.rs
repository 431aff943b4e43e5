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
