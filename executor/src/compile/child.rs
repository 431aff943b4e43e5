//! The compile process's side ([`main`]): what `wray __compile` runs. It
//! reads one request from stdin (a line of JSON, [`Request`], then the
//! component's bytes), builds an engine from the request's
//! [`CodeSettings`], checks that its [`engine_digest`] is the node's,
//! compiles, writes the serialized artifact into the file the node named
//! and exits. The node's side is `process.rs`.
//!
//! Exit statuses: 0 compiled; [`EXIT_REFUSED`] the component does not
//! compile (stderr says why); [`EXIT_ENGINE`] this engine is not the
//! node's (another build of wray); [`EXIT_FAILED`] anything else (a bad
//! request, the output not writable). Messages on stderr are one line of
//! at most [`MAX_MESSAGE`] bytes.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::{engine_digest, CodeSettings};

/// The component does not compile: its fault.
pub(crate) const EXIT_REFUSED: u8 = 1;
/// A bad request, an unwritable output, a host bug.
pub(crate) const EXIT_FAILED: u8 = 2;
/// The engine built here is not the node's.
pub(crate) const EXIT_ENGINE: u8 = 3;

/// Most bytes of the request's JSON line.
const MAX_REQUEST_LINE: u64 = 64 << 10;
/// Most bytes of a message on stderr.
pub(crate) const MAX_MESSAGE: usize = 4096;
/// Most bytes of a component the process reads: the node's own bound on a
/// component's code ([`MAX_CODE_BYTES`](crate::bounds::MAX_CODE_BYTES))
/// leaves room for the rest of its sections; 4 GiB is past any of them.
const MAX_COMPONENT: u64 = 4 << 30;

/// What the node asks of a compile process (the first line of its stdin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The settings of the node's engine.
    pub settings: CodeSettings,
    /// The node's [`engine_digest`]: this process refuses to compile with
    /// an engine of another.
    pub engine: String,
    /// Bytes of the component, which follow the line.
    pub size: u64,
    /// Where the artifact goes: the bytes of the path (Unix paths need not
    /// be UTF-8) of a file the node made, in a directory only its user
    /// may write.
    pub out: Vec<u8>,
}

/// Why the process stops without an artifact: an exit status and a line
/// for stderr.
#[derive(Debug)]
pub struct Failure {
    /// The process's exit status.
    pub code: u8,
    /// The line it writes to stderr.
    pub message: String,
}

fn failed(message: String) -> Failure {
    Failure {
        code: EXIT_FAILED,
        message,
    }
}

/// The compile process: serves one request from stdin (see the module
/// docs) and returns the process's exit status. `wray __compile` is this;
/// a node runs it through [`CompileCommand`](crate::config::CompileCommand).
/// Prints at most one line, on stderr.
pub fn main() -> u8 {
    match serve(&mut std::io::stdin().lock()) {
        Ok(()) => 0,
        Err(Failure { code, message }) => {
            let line = crate::bounds::truncate(message.replace('\n', " "), MAX_MESSAGE);
            let _ = writeln!(std::io::stderr(), "{line}");
            code
        }
    }
}

/// Reads a request and its component from `input`, compiles and writes
/// the artifact.
///
/// # Errors
/// [`Failure`] with the exit status and message described in the module
/// docs.
pub fn serve(input: &mut impl BufRead) -> Result<(), Failure> {
    let mut line = Vec::new();
    Read::take(&mut *input, MAX_REQUEST_LINE)
        .read_until(b'\n', &mut line)
        .map_err(|e| failed(format!("cannot read the request: {e}")))?;
    let request: Request =
        serde_json::from_slice(&line).map_err(|e| failed(format!("not a compile request: {e}")))?;
    if request.size > MAX_COMPONENT {
        return Err(failed(format!(
            "a component of {} bytes, more than the {MAX_COMPONENT} a compile process reads",
            request.size
        )));
    }
    let mut bytes = Vec::new();
    let size = usize::try_from(request.size).map_err(|e| failed(e.to_string()))?;
    bytes
        .try_reserve_exact(size)
        .map_err(|e| failed(format!("no memory for the component's {size} bytes: {e}")))?;
    Read::take(&mut *input, request.size)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(format!("cannot read the component: {e}")))?;
    if bytes.len() != size {
        return Err(failed(format!(
            "the component ended after {} of its {size} bytes",
            bytes.len()
        )));
    }
    let artifact = compile(&request, &bytes)?;
    let out = out_path(&request.out);
    // The file exists (the node made it, mode 0600): opened without
    // `create`, so a path the node did not make is never written.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&out)
        .map_err(|e| failed(format!("cannot open {}: {e}", out.display())))?;
    file.write_all(&artifact)
        .map_err(|e| failed(format!("cannot write {}: {e}", out.display())))
}

/// Compiles `bytes` with an engine of `request`'s settings, after checking
/// that it is the node's.
fn compile(request: &Request, bytes: &[u8]) -> Result<Vec<u8>, Failure> {
    super::init_cranelift_threads();
    let engine = request.settings.compile_engine().map_err(|e| Failure {
        code: EXIT_ENGINE,
        message: format!("cannot build the compile engine: {e}"),
    })?;
    let digest = engine_digest(&engine);
    if digest != request.engine {
        return Err(Failure {
            code: EXIT_ENGINE,
            message: format!(
                "this compile engine ({digest}) is not the node's ({}): the compile \
                 program is another build of wray than the node",
                request.engine
            ),
        });
    }
    engine.precompile_component(bytes).map_err(|e| Failure {
        code: EXIT_REFUSED,
        message: format!("{e:#}"),
    })
}

fn out_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeConfig;
    use crate::engine::build_engine;

    #[test]
    fn the_compile_engine_is_the_nodes_whatever_its_allocator() {
        for (fuel_metering, memory_cow) in [(false, true), (true, true), (false, false)] {
            for pooling in [true, false] {
                let config = NodeConfig {
                    fuel_metering,
                    memory_cow,
                    pooling,
                    max_instances: 4,
                    ..NodeConfig::default()
                };
                let node = build_engine(&config).unwrap();
                let child = CodeSettings::of(&config).compile_engine().unwrap();
                assert_eq!(
                    engine_digest(&node),
                    engine_digest(&child),
                    "fuel {fuel_metering}, cow {memory_cow}, pooling {pooling}"
                );
            }
        }
        let fuel = CodeSettings {
            fuel_metering: true,
            memory_cow: true,
        };
        let plain = CodeSettings {
            fuel_metering: false,
            memory_cow: true,
        };
        assert_ne!(
            engine_digest(&fuel.compile_engine().unwrap()),
            engine_digest(&plain.compile_engine().unwrap()),
            "fuel metering changes the code"
        );
    }

    fn request(engine: String, size: usize, out: &std::path::Path) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let request = Request {
            settings: CodeSettings {
                fuel_metering: false,
                memory_cow: true,
            },
            engine,
            size: size as u64,
            out: out.as_os_str().as_bytes().to_vec(),
        };
        let mut line = serde_json::to_vec(&request).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn a_request_of_another_engine_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::write(&out, b"").unwrap();
        let mut input = request("0123456789abcdef".into(), 0, &out);
        let err = serve(&mut &input[..]).unwrap_err();
        assert_eq!(err.code, EXIT_ENGINE, "{}", err.message);
        assert!(
            err.message.contains("is not the node's (0123456789abcdef)"),
            "{}",
            err.message
        );
        input.truncate(10);
        assert_eq!(serve(&mut &input[..]).unwrap_err().code, EXIT_FAILED);
    }

    #[test]
    fn a_short_component_and_a_bad_one_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::write(&out, b"").unwrap();
        let settings = CodeSettings {
            fuel_metering: false,
            memory_cow: true,
        };
        let digest = engine_digest(&settings.compile_engine().unwrap());
        let mut short = request(digest.clone(), 100, &out);
        short.extend_from_slice(b"\0asm");
        let err = serve(&mut &short[..]).unwrap_err();
        assert!(
            err.message.contains("ended after 4 of its 100 bytes"),
            "{}",
            err.message
        );
        let junk = b"\0asm\x0d\0\x01\0garbage";
        let mut bad = request(digest, junk.len(), &out);
        bad.extend_from_slice(junk);
        assert_eq!(serve(&mut &bad[..]).unwrap_err().code, EXIT_REFUSED);
    }
}
