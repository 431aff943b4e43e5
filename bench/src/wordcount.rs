//! Word count over every regular file under a directory, natively.
//!
//! A word is a maximal run of bytes in `[A-Za-z0-9_]`, counted
//! case-sensitively; any other byte (non-ASCII included) ends a word.
//! Symbolic links are not followed. This is the reference the wray example
//! `examples/wordcount` must match exactly.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// Whether `b` belongs to a word.
pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Adds the words of `text` to `counts`; returns how many it found.
pub fn count_into(text: &[u8], counts: &mut HashMap<Vec<u8>, u64>) -> u64 {
    let mut total = 0;
    for word in text.split(|b| !is_word_byte(*b)).filter(|w| !w.is_empty()) {
        total += 1;
        match counts.get_mut(word) {
            Some(c) => *c += 1,
            None => {
                counts.insert(word.to_vec(), 1);
            }
        }
    }
    total
}

/// Every regular file under `dir` (not following links), sorted.
///
/// # Errors
/// The first directory or metadata read that fails.
pub fn regular_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The result of a word count: the top words and the total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Up to `n` (count, word), most frequent first, ties by word ascending.
    pub top: Vec<(u64, String)>,
    /// Number of words.
    pub total: u64,
}

impl Summary {
    /// The example's stdout: `<count>\t<word>` lines then `total\t<n>`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (count, word) in &self.top {
            s.push_str(&format!("{count}\t{word}\n"));
        }
        s.push_str(&format!("total\t{}\n", self.total));
        s
    }
}

/// Counts every regular file under `dir` and keeps the `n` most frequent.
///
/// # Errors
/// The first file that cannot be read.
pub fn count_dir(dir: &Path, n: usize) -> io::Result<Summary> {
    let mut counts = HashMap::new();
    let mut total = 0;
    for file in regular_files(dir)? {
        total += count_into(&std::fs::read(&file)?, &mut counts);
    }
    let mut all: Vec<(u64, String)> = counts
        .into_iter()
        .map(|(w, c)| (c, String::from_utf8_lossy(&w).into_owned()))
        .collect();
    all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    all.truncate(n);
    Ok(Summary { top: all, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_runs_of_word_bytes() {
        let mut counts = HashMap::new();
        let n = count_into(
            "fn main() { let x_1 = Foo::foo; }é_b".as_bytes(),
            &mut counts,
        );
        assert_eq!(n, 7);
        assert_eq!(counts[&b"fn"[..]], 1);
        assert_eq!(counts[&b"x_1"[..]], 1);
        assert_eq!(counts[&b"Foo"[..]], 1);
        assert_eq!(counts[&b"foo"[..]], 1);
        assert_eq!(counts[&b"_b"[..]], 1);
    }

    #[test]
    fn counts_a_directory() {
        let dir = std::env::temp_dir().join(format!("wray-wc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), "b a b").unwrap();
        std::fs::write(dir.join("sub/c.txt"), "a\nb").unwrap();
        let s = count_dir(&dir, 20).unwrap();
        assert_eq!(s.top, vec![(3, "b".to_string()), (2, "a".to_string())]);
        assert_eq!(s.render(), "3\tb\n2\ta\ntotal\t5\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
