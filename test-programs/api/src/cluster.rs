//! Scenarios for a cluster of nodes (`cluster_bytes`, `cluster_spread`):
//! tasks that ask for a resource only some nodes have, so that they run
//! on another node than their driver's.

use std::time::Duration;

use wray::ObjectRef;

/// FNV-1a (64 bit) of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The length and FNV-1a of `bytes`, on a node with an accelerator.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn digest_on_accelerator(bytes: Vec<u8>) -> (u64, u64) {
    (bytes.len() as u64, fnv(&bytes))
}

/// Sleeps `ms`, then returns `i`, on a node with an accelerator.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn slow_on_accelerator(ms: u64, i: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    i
}

/// `cluster_bytes MIB`: puts MIB MiB here, digests them on a node with an
/// accelerator, and checks the digest against its own.
pub(crate) fn cluster_bytes(mib: usize) -> wray::Result<()> {
    let bytes: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
    let want = (bytes.len() as u64, fnv(&bytes));
    let put: ObjectRef<Vec<u8>> = wray::put(&bytes);
    drop(bytes);
    let got = digest_on_accelerator.remote(&put).get()?;
    println!(
        "cluster_bytes {} {}",
        got.0,
        if got == want { "match" } else { "differ" }
    );
    Ok(())
}

/// `cluster_spread N MS`: N tasks of MS ms each on accelerator nodes;
/// their sum.
pub(crate) fn cluster_spread(n: u64, ms: u64) -> wray::Result<()> {
    let refs: Vec<ObjectRef<u64>> = (0..n).map(|i| slow_on_accelerator.remote(ms, i)).collect();
    let sum: u64 = wray::get_all(&refs)?.iter().sum();
    println!("cluster_spread {sum}");
    Ok(())
}
