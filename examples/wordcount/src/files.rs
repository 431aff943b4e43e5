//! Which files to count, and how they are split between map tasks.

use std::io;
use std::path::Path;

/// Every regular file under `dir`, recursively, as `(path, size in bytes)`
/// sorted by path. Symlinks are neither followed nor counted.
///
/// # Errors
///
/// A directory that cannot be read, or an entry whose metadata cannot be.
pub fn regular_files(dir: &Path) -> io::Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            let meta = std::fs::symlink_metadata(&path)?;
            let kind = meta.file_type();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                files.push((path.to_string_lossy().into_owned(), meta.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Groups `files` (in order) into chunks of about `target` bytes: a chunk is
/// closed once it holds at least `target` bytes, and a file is never split.
pub fn chunks(files: Vec<(String, u64)>, target: u64) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut chunk = Vec::new();
    let mut bytes = 0u64;
    for (path, size) in files {
        chunk.push(path);
        bytes += size;
        if bytes >= target {
            out.push(std::mem::take(&mut chunk));
            bytes = 0;
        }
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_close_at_the_target_and_keep_order() {
        let files = vec![
            ("a".to_string(), 600),
            ("b".to_string(), 600),
            ("c".to_string(), 5000),
            ("d".to_string(), 1),
        ];
        assert_eq!(chunks(files, 1000), [vec!["a", "b"], vec!["c"], vec!["d"]]);
    }
}
