//! Reference counting: objects live while a ref to them is alive anywhere,
//! and are freed once none is.

use wray::ObjectRef;

/// Puts three values and returns refs to them: the objects must outlive
/// this task's instance, held by the returned value.
#[wray::remote]
pub(crate) fn make_refs() -> Vec<ObjectRef<i64>> {
    (1..=3).map(|i| wray::put(&i)).collect()
}

/// A 16 MiB value, dropped by the caller right after use.
#[wray::remote]
pub(crate) fn big(seed: u8) -> Vec<u8> {
    vec![seed; 16 << 20]
}

/// `refs`: refs returned inside a value stay valid after their task ended;
/// 64 puts and 16 task results of 16 MiB each, each dropped before the next,
/// never pile up (the host checks the store's peak).
pub(crate) fn refs() -> wray::Result<()> {
    let inner = make_refs.remote().get()?;
    let values = wray::get_all(&inner)?;
    println!("contained {values:?}");
    for i in 0..64u8 {
        let r = wray::put(&vec![i; 16 << 20]);
        let v = r.get()?;
        if v[0] != i {
            println!("wrong value");
        }
    }
    for i in 0..16u8 {
        let v = big.remote(i).get()?;
        if v.len() != 16 << 20 || v[0] != i {
            println!("wrong result");
        }
    }
    println!("churned");
    Ok(())
}

/// `spill`: six 16 MiB objects alive at once (the host runs this with a
/// 48 MiB store, so some spill to disk): every one reads back, by `get` and
/// by `map`.
pub(crate) fn spill() -> wray::Result<()> {
    let refs: Vec<_> = (0..6u8).map(|i| wray::put(&vec![i; 16 << 20])).collect();
    let mut ok = true;
    for (i, r) in refs.iter().enumerate() {
        let v = r.get()?;
        let m = r.map()?;
        ok &= v.len() == 16 << 20 && v.iter().all(|b| usize::from(*b) == i);
        ok &= m.len() == 16 << 20 && m.iter().all(|b| usize::from(*b) == i);
    }
    println!("spilled and read back {ok}");
    Ok(())
}
