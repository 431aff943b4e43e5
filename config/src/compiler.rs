//! [`CompileCommand`]: the program a node compiles components with, in a
//! child process it can kill (`executor/src/compile/process.rs` runs it).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Default [`CompileCommand::memory_limit`]: 8 GiB. Compiling a 40 MiB
/// component of 64 KiB functions (`host/tests/common/synth.rs`) peaked at
/// 212 MiB resident (measured with `getrusage`, 2 cores): a compile's
/// memory grows with its largest functions and the threads compiling at
/// once more than with the whole component; the bound is far past that,
/// to stop only a runaway compile.
pub const DEFAULT_COMPILE_MEMORY: u64 = 8 << 30;

/// The program a node compiles components with, in a child process it can
/// kill at the compile's time limit ([`NodeConfig::compiler`]).
///
/// [`NodeConfig::compiler`]: crate::NodeConfig::compiler
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileCommand {
    /// The program: a `wray` binary of the same build as the node (a
    /// compile process of another build refuses to compile: its engine
    /// would not be the node's).
    pub program: PathBuf,
    /// Its arguments: `["__compile"]` for `wray`. The request follows on
    /// stdin; the program runs `wray_host::compile_process`
    /// and exits with its status.
    pub args: Vec<OsString>,
    /// Environment variables set for it (besides the node's own).
    pub envs: Vec<(OsString, OsString)>,
    /// Bytes the process may map writable (its `RLIMIT_DATA`): heap,
    /// thread stacks, the artifact.
    pub memory_limit: u64,
}

impl CompileCommand {
    /// `wray __compile`, the binary at `program`.
    pub fn wray(program: PathBuf) -> Self {
        CompileCommand {
            program,
            args: vec!["__compile".into()],
            envs: Vec::new(),
            memory_limit: DEFAULT_COMPILE_MEMORY,
        }
    }

    /// `wray __compile` of this process's own binary, when this process is
    /// `wray` (its executable is named `wray`); `None` for other programs
    /// embedding a node (tests, benchmarks), which then compile in-process.
    /// The program is `/proc/self/exe`, the very binary this process runs
    /// even after a newer one was installed at its path.
    pub fn this_wray() -> Option<Self> {
        let exe = std::env::current_exe().ok()?;
        if exe.file_name()? != "wray" {
            return None;
        }
        let program = Path::new("/proc/self/exe");
        Some(Self::wray(if program.exists() {
            program.to_path_buf()
        } else {
            exe
        }))
    }
}
