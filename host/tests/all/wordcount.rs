//! The word count example against a plain native count of the same files.

use std::path::Path;

use wray_bench::wordcount::count_dir;
use wray_host::Preopen;

use crate::support::{small_tree, Setup, TestNode};

/// The corpus the README's demo counts (installed by `cargo xtask setup`).
const CORPUS: &str = "/usr/lib/rustlib/src/rust/library";

fn check(dir: &Path, num_cpus: usize) {
    let expected = count_dir(dir, 20).expect("native count").render();
    let setup = Setup {
        num_cpus,
        preopens: vec![Preopen {
            host: dir.to_path_buf(),
            guest: "/data".into(),
        }],
        ..Setup::default()
    };
    let node = TestNode::start(setup);
    let (result, stdout) = node.run("wordcount", &["/data"]);
    assert_eq!(result, Ok(()));
    assert_eq!(stdout, expected);
}

#[test]
fn wordcount_matches_native_count_on_a_small_tree() {
    let dir = small_tree();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("a/one.rs"), dir.path().join("link.rs")).unwrap();
    check(dir.path(), 2);
}

#[test]
fn wordcount_matches_native_count_on_the_rust_std_sources() {
    let corpus = Path::new(CORPUS);
    assert!(
        corpus.is_dir(),
        "{CORPUS} is missing: `cargo xtask setup` installs it (Debian rust-web-src)"
    );
    check(corpus, 2);
}
