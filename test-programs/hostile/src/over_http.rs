//! Attacks a client makes through a node's HTTP API (`wray start`): plain
//! functions whose size is their argument, each meeting one of the node's
//! bounds (its output, the object store's inline budget, what one answer
//! carries). The actor [`Hog`](crate::leaks::Hog) and
//! [`spin`](crate::hangs::spin) serve the same client for guest memory and
//! time limits.

use std::io::Write;

use wray::ObjectRef;

/// Writes `mib` MiB to stdout, in lines of 64 KiB; the bytes written.
#[wray::remote]
pub(crate) fn print_mib(mib: u32) -> u64 {
    let mut line = vec![b'x'; 64 << 10];
    if let Some(last) = line.last_mut() {
        *last = b'\n';
    }
    let mut out = std::io::stdout().lock();
    let mut written = 0u64;
    for _ in 0..u64::from(mib) * 16 {
        if out.write_all(&line).is_err() {
            break;
        }
        written += line.len() as u64;
    }
    written
}

/// `n` puts of an `i64`, all held until it returns (every 1,024th read
/// back); the puts stored before the store refused one, or `n`.
#[wray::remote]
pub(crate) fn put_many(n: u64) -> u64 {
    let mut refs: Vec<ObjectRef<i64>> = Vec::new();
    for i in 0..n {
        let r = wray::put(&(i as i64));
        if i % 1024 == 1023 && r.get().is_err() {
            break;
        }
        refs.push(r);
    }
    refs.len() as u64
}

/// A string of `mib` MiB of `x`.
#[wray::remote]
pub(crate) fn big_string(mib: u32) -> String {
    "x".repeat((mib as usize) << 20)
}
