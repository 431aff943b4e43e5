//! The sandbox suite: every attack of `test-programs/hostile` on a fresh
//! node (each must end in a clear error for the task that tried, the node
//! must run the next task, and the process must get back its files,
//! mappings, threads and memory) and the fuzzing guest on a few seeds. The
//! `wray` process killed or interrupted mid-run is `cli/tests/hostile`.
//!
//! | module | what |
//! | --- | --- |
//! | [`crashes`] | sizes, offsets and counts that crashed the host |
//! | [`hangs`] | blocking calls, waits and deadlocks that hung it |
//! | [`leaks`] | memory and tables a guest could grow without bound |
//! | [`budgets`] | node-wide budgets: host memory per object, guest memory |
//! | [`trust`] | values, errors and ids one guest or job forges for another |
//! | [`fuzz`] | random calls of every import from a few seeds |

mod budgets;
mod crashes;
mod fuzz;
mod hangs;
mod leaks;
mod support;
mod trust;
