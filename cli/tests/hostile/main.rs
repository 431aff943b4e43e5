//! The sandbox suite's process tests: `wray run` with out-of-range flags and
//! files that are no component, killed or interrupted mid-run, and two runs
//! at once. The attacks on a node are `host/tests/hostile`.
//!
//! | module | what |
//! | --- | --- |
//! | [`process`] | `wray run` flags, files, and its process killed mid-run |

mod process;
mod support;
