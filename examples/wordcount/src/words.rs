//! Words: the tokenizer, per-task counting, the merge-join of sorted counts,
//! and the final ranking. Pure functions, tested natively.

use std::collections::HashMap;

/// Whether `b` belongs to a word: ASCII letters, digits and `_`.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The words of `bytes`: maximal runs of `[A-Za-z0-9_]`, case-sensitive;
/// every other byte (including any byte of a non-ASCII character) ends a word.
pub fn words(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|&b| !is_word_byte(b)).filter(|w| !w.is_empty())
}

/// Word counts of one map task.
#[derive(Debug, Default)]
pub struct WordCounts {
    counts: HashMap<Vec<u8>, u64>,
}

impl WordCounts {
    /// Counts the words of `bytes`.
    pub fn add(&mut self, bytes: &[u8]) {
        for w in words(bytes) {
            match self.counts.get_mut(w) {
                Some(n) => *n += 1,
                None => {
                    self.counts.insert(w.to_vec(), 1);
                }
            }
        }
    }

    /// The counts, sorted by word.
    pub fn into_sorted(self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = self
            .counts
            .into_iter()
            // Words are ASCII, so this never replaces anything.
            .map(|(w, n)| (String::from_utf8_lossy(&w).into_owned(), n))
            .collect();
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// Merge-join of two vectors sorted by word, adding the counts of equal words.
pub fn merge(a: Vec<(String, u64)>, b: Vec<(String, u64)>) -> Vec<(String, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => {
                    if let (Some((w, n)), Some((_, m))) = (a.next(), b.next()) {
                        out.push((w, n + m));
                    }
                    continue;
                }
            },
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_a { a.next() } else { b.next() };
        out.extend(next);
    }
    out
}

/// The `n` most frequent words, most frequent first, ties by word ascending.
pub fn top(mut counts: Vec<(String, u64)>, n: usize) -> Vec<(String, u64)> {
    counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts.truncate(n);
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_words(s: &[u8]) -> Vec<&str> {
        words(s)
            .map(|w| std::str::from_utf8(w).expect("ascii"))
            .collect()
    }

    #[test]
    fn words_are_runs_of_word_bytes() {
        assert_eq!(
            text_words(b"fn main() { let x_1 = 2; }"),
            ["fn", "main", "let", "x_1", "2"]
        );
        assert_eq!(
            text_words("caf\u{e9}s na\u{ef}ve".as_bytes()),
            ["caf", "s", "na", "ve"]
        );
        assert_eq!(text_words(b"Word word"), ["Word", "word"]);
        assert!(text_words(b"  ,;\n").is_empty());
    }

    #[test]
    fn counts_are_sorted_by_word() {
        let mut c = WordCounts::default();
        c.add(b"b a b");
        c.add(b"c b");
        assert_eq!(
            c.into_sorted(),
            [("a".into(), 1), ("b".into(), 3), ("c".into(), 1)]
        );
    }

    #[test]
    fn merge_adds_equal_words() {
        let a = vec![("a".into(), 1), ("c".into(), 2)];
        let b = vec![("b".into(), 5), ("c".into(), 1), ("d".into(), 1)];
        assert_eq!(
            merge(a, b),
            [
                ("a".into(), 1),
                ("b".into(), 5),
                ("c".into(), 3),
                ("d".into(), 1)
            ]
        );
    }

    #[test]
    fn top_orders_by_count_then_word() {
        let counts = vec![
            ("b".into(), 2),
            ("a".into(), 2),
            ("c".into(), 9),
            ("d".into(), 1),
        ];
        assert_eq!(
            top(counts, 3),
            [("c".into(), 9), ("a".into(), 2), ("b".into(), 2)]
        );
    }
}
