//! Ray's tree reduce, as a wray component.
//!
//! `N` tasks `make_array(i)` each build array `i` = `[i * M + j for j in
//! 0..M]`; `add_arrays` tasks sum them element-wise, pairwise, level by
//! level, each taking the `ObjectRef`s of the level below (so the arrays
//! never pass through the driver). The driver gets the final array and checks
//! its sum and first element against the closed form.

use wray::ObjectRef;

/// Number of arrays.
const N: u64 = 100;
/// Length of each array.
const M: u64 = 1000;

/// Array `i`: `[i * M + j for j in 0..M]`.
#[wray::remote]
fn make_array(i: u64) -> Vec<u64> {
    (0..M).map(|j| i * M + j).collect()
}

/// Element-wise sum of two arrays of the same length.
#[wray::remote]
fn add_arrays(a: Vec<u64>, b: Vec<u64>) -> Result<Vec<u64>, String> {
    if a.len() != b.len() {
        return Err(format!("lengths differ: {} and {}", a.len(), b.len()));
    }
    Ok(a.iter().zip(&b).map(|(x, y)| x + y).collect())
}

/// Reduces the arrays and prints `sum <n>` and `first <n>`.
#[wray::main]
fn main() -> Result<(), String> {
    let mut level: Vec<ObjectRef<Vec<u64>>> = (0..N).map(|i| make_array.remote(i)).collect();
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for pair in level.chunks(2) {
            match pair {
                [a, b] => next.push(add_arrays.remote(a, b)),
                [a] => next.push(a.clone()),
                _ => {}
            }
        }
        level = next;
    }
    let total = match level.first() {
        Some(r) => r.get().map_err(|e| e.to_string())?,
        None => return Err("no arrays".to_string()),
    };

    let sum: u64 = total.iter().sum();
    let first = total.first().copied().unwrap_or_default();
    println!("sum {sum}");
    println!("first {first}");

    // total[j] = sum over i of (i * M + j) = M * N(N-1)/2 + N * j.
    let expected_first = M * N * (N - 1) / 2;
    let expected_sum = M * expected_first + N * M * (M - 1) / 2;
    if sum != expected_sum || first != expected_first {
        return Err(format!(
            "expected sum {expected_sum} and first {expected_first}"
        ));
    }
    Ok(())
}

wray::export! {
    main: main,
    functions: [make_array, add_arrays],
}
