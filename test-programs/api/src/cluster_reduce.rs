//! Reductions for a cluster of nodes (`cluster_tree_reduce`,
//! `cluster_wordcount`): Ray's tree reduce and a MapReduce word count
//! whose tasks ask for `{"accelerator": 1}` (and no CPU), so that a burst
//! of them spreads over the nodes that have accelerators. Each driver
//! checks its result against a closed form and prints it, so that a test
//! can compare a one-node run with a three-node one.

use std::time::{Duration, Instant};

use wray::ObjectRef;

/// Word counts sorted by word.
type Counts = Vec<(String, u64)>;

/// FNV-1a (64 bit) of `bytes`, continuing from `hash`.
fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The FNV-1a offset basis.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Array `i` of `len`: `[i * len + j for j in 0..len]`, after sleeping
/// `ms` (the work a leaf stands for). In `f64`, as Ray's benchmark's
/// numpy arrays (8 bytes a number); every sum stays an integer below
/// 2^53, so it is exact.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn reduce_leaf(i: u64, ms: u64, len: u64) -> Vec<f64> {
    std::thread::sleep(Duration::from_millis(ms));
    (0..len).map(|j| (i * len + j) as f64).collect()
}

/// Element-wise sum of two arrays of the same length.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn reduce_add(a: Vec<f64>, b: Vec<f64>) -> Result<Vec<f64>, String> {
    if a.len() != b.len() {
        return Err(format!("lengths differ: {} and {}", a.len(), b.len()));
    }
    Ok(a.iter().zip(&b).map(|(x, y)| x + y).collect())
}

/// Pairs the refs of `level` with `join` until one is left (an odd one
/// out goes up a level as it is).
fn tree<T>(
    mut level: Vec<ObjectRef<T>>,
    join: impl Fn(&ObjectRef<T>, &ObjectRef<T>) -> ObjectRef<T>,
) -> Option<ObjectRef<T>> {
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for pair in level.chunks(2) {
            match pair {
                [a, b] => next.push(join(a, b)),
                [a] => next.push(a.clone()),
                _ => {}
            }
        }
        level = next;
    }
    level.pop()
}

/// `cluster_tree_reduce N MS LEN`: N leaves of LEN numbers (each after MS
/// ms), summed pairwise to one array. Prints its sum, first and last
/// element and digest, whether they are the closed form's (`exact`), and
/// the time from the first submit to the result here (`tree_reduce_ms`).
pub(crate) fn cluster_tree_reduce(n: u64, ms: u64, len: u64) -> wray::Result<()> {
    let start = Instant::now();
    let leaves = (0..n).map(|i| reduce_leaf.remote(i, ms, len)).collect();
    let Some(root) = tree(leaves, |a, b| reduce_add.remote(a, b)) else {
        println!("tree_reduce no leaves");
        return Ok(());
    };
    let total = root.get()?;
    let took = start.elapsed();
    let sum: f64 = total.iter().sum();
    let first = total.first().copied().unwrap_or_default();
    let last = total.last().copied().unwrap_or_default();
    let digest = total
        .iter()
        .fold(FNV_START, |h, x| fnv(h, &x.to_le_bytes()));
    // total[j] = sum over i of (i * len + j) = len * n(n-1)/2 + n * j.
    let base = len * (n * n.saturating_sub(1) / 2);
    let exact = total.len() as u64 == len
        && total
            .iter()
            .zip(0..)
            .all(|(x, j): (&f64, u64)| *x == (base + n * j) as f64);
    println!(
        "tree_reduce len {} sum {} first {} last {} digest {digest:#x} {}",
        total.len(),
        sum as u64,
        first as u64,
        last as u64,
        if exact { "exact" } else { "differ" }
    );
    println!("tree_reduce_ms {}", took.as_millis());
    Ok(())
}

/// Map: the words of `text` (split on whitespace) and how often each
/// occurs, sorted by word, after sleeping `ms`.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn count_chunk(text: String, ms: u64) -> Counts {
    std::thread::sleep(Duration::from_millis(ms));
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for word in text.split_whitespace() {
        *counts.entry(word).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(w, n)| (w.to_string(), n))
        .collect()
}

/// Reduce: merge-join of two word-sorted count vectors.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0)]
pub(crate) fn merge_counts(a: Counts, b: Counts) -> Counts {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                let (Some((w, n)), Some((_, m))) = (a.next(), b.next()) else {
                    break;
                };
                Some((w, n + m))
            }
            (Some(x), Some(y)) if x.0 < y.0 => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
}

/// Chunk `c` of the word count's text: word `w<k>` `k` times for `k` in
/// `1..=kinds` (interleaved: round `r` says every `w<k>` with `k > r`),
/// and `c<c>` once.
fn chunk_text(c: u64, kinds: u64) -> String {
    let mut text = format!("c{c}");
    for round in 0..kinds {
        for k in round + 1..=kinds {
            text.push_str(&format!(" w{k}"));
        }
        text.push('\n');
    }
    text
}

/// `cluster_wordcount CHUNKS KINDS MS`: CHUNKS texts put here (see
/// [`chunk_text`]), counted by one map task each (MS ms each) and merged
/// pairwise. Prints the number of words and of distinct words, the most
/// frequent word, a digest of every count, and whether every count is
/// the closed form's (`w<k>`: CHUNKS * k, `c<c>`: 1).
pub(crate) fn cluster_wordcount(chunks: u64, kinds: u64, ms: u64) -> wray::Result<()> {
    let texts: Vec<ObjectRef<String>> = (0..chunks)
        .map(|c| wray::put(&chunk_text(c, kinds)))
        .collect();
    let maps = texts.iter().map(|t| count_chunk.remote(t, ms)).collect();
    let counts = match tree(maps, |a, b| merge_counts.remote(a, b)) {
        Some(root) => root.get()?,
        None => Vec::new(),
    };
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let top = counts
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(w, n)| format!("{w} {n}"))
        .unwrap_or_default();
    let digest = counts.iter().fold(FNV_START, |h, (w, n)| {
        fnv(h, format!("{w}:{n}\n").as_bytes())
    });
    let want = |w: &str| -> Option<u64> {
        let (kind, number) = w.split_at(1);
        let number: u64 = number.parse().ok()?;
        match kind {
            "w" if (1..=kinds).contains(&number) => Some(chunks * number),
            "c" if number < chunks => Some(1),
            _ => None,
        }
    };
    let exact =
        counts.len() as u64 == kinds + chunks && counts.iter().all(|(w, n)| want(w) == Some(*n));
    println!(
        "wordcount total {total} distinct {} top {top} digest {digest:#x} {}",
        counts.len(),
        if exact { "exact" } else { "differ" }
    );
    Ok(())
}
