//! Scenarios `put_get` and `wait`.

use std::collections::BTreeMap;
use std::time::Duration;

use wray::ObjectRef;

/// A user-defined value type.
#[wray::value]
#[derive(Debug, PartialEq)]
pub struct Point {
    x: i32,
    y: i32,
}

/// Sleeps `ms` milliseconds, then returns `ms`.
#[wray::remote]
pub(crate) fn sleep_ms(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

/// Returns its argument: a 128-bit integer, which JSON callers (the HTTP
/// API) must pass exactly, beyond the 64 bits a float keeps.
#[wray::remote]
pub(crate) fn echo_wide(x: u128) -> u128 {
    x
}

/// `put_get`: every kind of value survives a put and a get.
pub(crate) fn put_get() -> wray::Result<()> {
    println!("i64 {}", wray::put(&42i64).get()?);
    println!("string {:?}", wray::put(&"hello".to_string()).get()?);
    println!("vec {:?}", wray::put(&vec![1.5f64, 2.5]).get()?);
    println!("struct {:?}", wray::put(&Point { x: 1, y: -2 }).get()?);
    println!("option {:?}", wray::put(&Some(7u32)).get()?);
    println!("tuple {:?}", wray::put(&(1u8, "a".to_string())).get()?);
    let map = BTreeMap::from([("a".to_string(), 1i64), ("b".to_string(), 2)]);
    println!("map {:?}", wray::put(&map).get()?);
    println!("empty {:?}", wray::put(&Vec::<u8>::new()).get()?);

    let big: Vec<u8> = (0..1usize << 20).map(|i| (i % 251) as u8).collect();
    let back = wray::put(&big).get()?;
    let checksum: u64 = back.iter().map(|&b| u64::from(b)).sum();
    println!("big {} {checksum}", back.len());

    let refs: Vec<ObjectRef<i64>> = (1..=3i64).map(|i| wray::put(&i)).collect();
    println!("get_all {:?}", wray::get_all(&refs)?);
    Ok(())
}

/// Positions of `some` within `all`, compared by id.
fn indices<T>(all: &[ObjectRef<T>], some: &[ObjectRef<T>]) -> Vec<usize> {
    some.iter()
        .filter_map(|r| all.iter().position(|x| x.id() == r.id()))
        .collect()
}

/// `wait`: readiness in input order, timeouts, clamping, get_timeout.
pub(crate) fn wait() -> wray::Result<()> {
    let refs = vec![
        sleep_ms.remote(1500u64),
        sleep_ms.remote(0u64),
        sleep_ms.remote(10u64),
    ];
    let (ready, pending) = wray::wait(&refs, 2, None);
    println!(
        "ready {:?} pending {:?}",
        indices(&refs, &ready),
        indices(&refs, &pending)
    );

    let slow = [sleep_ms.remote(3000u64)];
    let (ready, pending) = wray::wait(&slow, 1, Some(Duration::from_millis(50)));
    println!(
        "timeout ready {:?} pending {:?}",
        indices(&slow, &ready),
        indices(&slow, &pending)
    );

    let (ready, pending) = wray::wait(&refs, 10, None);
    println!(
        "all ready {:?} pending {:?}",
        indices(&refs, &ready),
        indices(&refs, &pending)
    );

    let slow = sleep_ms.remote(3000u64);
    match wray::get_timeout(&slow, Duration::from_millis(50)) {
        Ok(v) => println!("get_timeout ok {v}"),
        Err(e) => println!("get_timeout {}", e.kind()),
    }
    Ok(())
}
