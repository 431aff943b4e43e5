//! MapReduce word count, as a wray component.
//!
//! `main(["/data"])` lists every regular file under `/data` (recursively,
//! without following symlinks), groups the sorted paths into chunks of about
//! 1 MiB, and submits one `count_words` map task per chunk. The sorted
//! `(word, count)` vectors are then merged pairwise by a tree of `merge`
//! tasks, each taking the `ObjectRef`s of the level below as arguments, so
//! no partial result passes through the driver. Finally it prints the 20 most
//! frequent words (`<count>\t<word>`) and `total\t<number of words>`.

mod files;
mod words;

use wray::ObjectRef;

/// Word counts sorted by word.
type Counts = Vec<(String, u64)>;

/// About how many bytes of files one map task reads.
const CHUNK_BYTES: u64 = 1 << 20;

/// How many words the report lists.
const TOP: usize = 20;

/// Map: counts the words of every file in `paths`, sorted by word.
#[wray::remote]
fn count_words(paths: Vec<String>) -> Result<Counts, String> {
    let mut counts = words::WordCounts::default();
    for path in &paths {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
        counts.add(&bytes);
    }
    Ok(counts.into_sorted())
}

/// Reduce: merges two word-sorted count vectors.
#[wray::remote]
fn merge(a: Counts, b: Counts) -> Counts {
    words::merge(a, b)
}

/// Counts the words of every file under `args[0]`.
#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let dir = args.first().ok_or("usage: wordcount <directory>")?;
    let files = files::regular_files(dir.as_ref()).map_err(|e| format!("listing {dir}: {e}"))?;
    let chunks = files::chunks(files, CHUNK_BYTES);
    wray::log(
        wray::LogLevel::Info,
        &format!("wordcount: {} map tasks", chunks.len()),
    );

    let mut level: Vec<ObjectRef<Counts>> =
        chunks.into_iter().map(|c| count_words.remote(c)).collect();
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for pair in level.chunks(2) {
            match pair {
                [a, b] => next.push(merge.remote(a, b)),
                [a] => next.push(a.clone()),
                _ => {}
            }
        }
        level = next;
    }

    let counts = match level.first() {
        Some(all) => all.get().map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    for (word, n) in words::top(counts, TOP) {
        println!("{n}\t{word}");
    }
    println!("total\t{total}");
    Ok(())
}

wray::export! {
    main: main,
    functions: [count_words, merge],
}
