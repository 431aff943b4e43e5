//! `wordcount_native DIR`: the word count of `examples/wordcount`, as a plain
//! single-threaded Rust program (the baseline wray's overhead is measured
//! against). Prints the same lines as the example.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: wordcount_native DIR");
        return ExitCode::from(2);
    };
    match wray_bench::wordcount::count_dir(&dir, 20) {
        Ok(summary) => {
            print!("{}", summary.render());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
