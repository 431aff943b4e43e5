//! One fuzzing run: random calls of every import, with what earlier calls
//! returned (real ids, objects being made, actors) mixed with forged values.
//!
//! Calls that block until an object exists (`stat`, `map`) only name objects
//! that exist already or never will (sealed, forged): an object that this
//! task's own children wait for would deadlock the task on itself, which
//! proves nothing about the host. `get` and `wait` always carry a timeout.

use wray::__private::bindings::types as wit;
use wray::__private::bindings::{mapping, objects, runtime, tasks};

use crate::rng::Rng;

/// Ids kept for later calls.
const POOL: usize = 256;

/// What earlier calls returned.
struct State {
    rng: Rng,
    /// Ids of objects that exist (sealed) or never will (forged).
    settled: Vec<wit::ObjectId>,
    /// Ids of objects submitted tasks will make.
    pending: Vec<wit::ObjectId>,
    /// Objects this task is making (`reserve`, `create`).
    making: Vec<wit::ObjectId>,
    actors: Vec<wit::TaskId>,
    /// A region of linear memory for windows: (start, length).
    region: (usize, usize),
    errors: u64,
}

fn keep(pool: &mut Vec<wit::ObjectId>, id: wit::ObjectId, rng: &mut Rng) {
    if pool.len() < POOL {
        pool.push(id);
    } else {
        let i = rng.below(POOL as u64) as usize;
        pool[i] = id;
    }
}

impl State {
    fn error<T, E>(&mut self, r: &Result<T, E>) {
        if r.is_err() {
            self.errors += 1;
        }
    }

    /// An id: a settled one, a pending one, or forged.
    fn id(&mut self, may_be_pending: bool) -> wit::ObjectId {
        let me = runtime::task_id();
        match self.rng.below(6) {
            0 | 1 if !self.settled.is_empty() => *self.rng.pick(&self.settled),
            2 if may_be_pending && !self.pending.is_empty() => *self.rng.pick(&self.pending),
            3 => wit::ObjectId {
                task: wit::TaskId {
                    hi: self.rng.next(),
                    lo: self.rng.next(),
                },
                index: self.rng.next() as u32,
            },
            4 => wit::ObjectId {
                task: wit::TaskId {
                    hi: me.hi,
                    lo: self.rng.next(),
                },
                index: self.rng.count(),
            },
            _ => wit::ObjectId {
                task: me,
                index: 0x8000_0000 | self.rng.below(4096) as u32,
            },
        }
    }

    fn ids(&mut self, may_be_pending: bool) -> Vec<wit::ObjectId> {
        let n = self.rng.below(6);
        (0..n).map(|_| self.id(may_be_pending)).collect()
    }

    /// A window: mostly inside the region, page-aligned or not; sometimes
    /// over the module's own data at address 0.
    fn window(&mut self) -> &'static [u8] {
        let (start, len) = self.region;
        let (addr, size) = match self.rng.below(10) {
            0 => (0, 65536),
            1 => {
                let off = self.rng.below(len as u64) as usize;
                (start + off, self.rng.below((len - off) as u64) as usize)
            }
            _ => {
                let pages = (len / 4096) as u64;
                let first = self.rng.below(pages) as usize;
                let n = 1 + self.rng.below((pages - first as u64).min(64)) as usize;
                (start + first * 4096, n * 4096)
            }
        };
        // SAFETY: the range lies in linear memory (the region was grown,
        // and address 0.. is the module's data).
        unsafe { core::slice::from_raw_parts(addr as *const u8, size) }
    }

    fn codec(&mut self) -> wit::Codec {
        *self
            .rng
            .pick(&[wit::Codec::Rkyv, wit::Codec::Json, wit::Codec::Raw])
    }

    fn payload(&mut self) -> wit::Payload {
        let len = if self.rng.one_in(20) {
            (100 << 10) + self.rng.below(64 << 10) as usize
        } else {
            self.rng.below(512) as usize
        };
        wit::Payload {
            codec: self.codec(),
            data: self.rng.bytes(len),
            refs: self.ids(false),
        }
    }

    fn args(&mut self) -> Vec<wit::Arg> {
        let n = self.rng.below(4);
        (0..n)
            .map(|_| {
                if self.rng.one_in(2) {
                    wit::Arg::Object(self.id(true))
                } else {
                    wit::Arg::Value(self.payload())
                }
            })
            .collect()
    }

    fn options(&mut self) -> wit::TaskOptions {
        let custom = if self.rng.one_in(4) {
            vec![("fuzz".to_string(), self.rng.quantity().unwrap_or(1.0))]
        } else {
            Vec::new()
        };
        wit::TaskOptions {
            detached: self.rng.one_in(2),
            num_returns: self.rng.count(),
            resources: wit::ResourceRequest {
                num_cpus: self.rng.quantity(),
                num_gpus: self.rng.quantity(),
                memory: self.rng.one_in(4).then(|| self.rng.size()),
                custom,
            },
            limits: wit::Limits {
                max_memory: self.rng.one_in(4).then(|| self.rng.size()),
                timeout_ms: self.rng.one_in(4).then(|| self.rng.size()),
                fuel: self.rng.one_in(8).then(|| self.rng.size()),
            },
            result_codec: match self.rng.below(4) {
                0 => Some(wit::Codec::Json),
                1 => Some(wit::Codec::Raw),
                2 => Some(wit::Codec::Rkyv),
                _ => None,
            },
        }
    }

    fn timeout(&mut self) -> Option<u64> {
        Some(self.rng.below(3))
    }

    /// Makes one random call.
    fn call(&mut self) {
        match self.rng.below(24) {
            0 => {
                let p = self.payload();
                let id = objects::put(&p);
                keep(&mut self.settled, id, &mut self.rng);
            }
            1 => {
                let ids = self.ids(true);
                let t = self.timeout();
                let r = objects::get(&ids, t);
                self.error(&r);
            }
            2 => {
                let ids = self.ids(true);
                let n = self.rng.count();
                let t = self.timeout();
                objects::wait(&ids, n, t);
            }
            3 => {
                let ids = self.ids(true);
                objects::release(&ids);
            }
            4 => {
                mapping::page_size();
            }
            5 => {
                let id = self.id(false);
                let r = mapping::stat(id);
                self.error(&r);
            }
            6 | 7 => {
                let id = self.id(false);
                let w = self.window();
                let r = mapping::map(id, w);
                self.error(&r);
            }
            8 => {
                let size = self.rng.size();
                let w = self.window();
                let r = mapping::create(size, w);
                self.error(&r);
                if let Ok(id) = r {
                    keep(&mut self.making, id, &mut self.rng);
                }
            }
            9 => {
                let size = self.rng.size();
                let r = mapping::reserve(size);
                self.error(&r);
                if let Ok(id) = r {
                    keep(&mut self.making, id, &mut self.rng);
                }
            }
            10 | 11 => {
                let id = if self.making.is_empty() || self.rng.one_in(4) {
                    self.id(false)
                } else {
                    *self.rng.pick(&self.making)
                };
                let offset = self.rng.size();
                let len = self.rng.below(8192) as usize;
                let bytes = self.rng.bytes(len);
                let r = mapping::write(id, offset, &bytes);
                self.error(&r);
            }
            12 => {
                let id = if self.making.is_empty() || self.rng.one_in(4) {
                    self.id(false)
                } else {
                    *self.rng.pick(&self.making)
                };
                let size = if self.rng.one_in(2) {
                    self.rng.below(8192)
                } else {
                    self.rng.size()
                };
                let codec = self.codec();
                let refs = self.ids(false);
                let r = mapping::seal(id, size, codec, &refs);
                self.error(&r);
                if r.is_ok() {
                    self.making.retain(|m| {
                        (m.task.hi, m.task.lo, m.index) != (id.task.hi, id.task.lo, id.index)
                    });
                    keep(&mut self.settled, id, &mut self.rng);
                }
            }
            13 if self.region.0 == 0 || self.rng.one_in(2) => {
                let w = self.window();
                mapping::unmap(w);
            }
            13 => {
                // Anywhere in the scratch region (never the module's own
                // data: the host would zero it, as asked), up to all of it.
                let (start, len) = self.region;
                let off = self.rng.below(len as u64) as usize;
                let n = self.rng.below((len - off) as u64 + 1) as usize;
                // SAFETY: the range lies in the grown scratch region.
                let r = unsafe { core::slice::from_raw_parts((start + off) as *const u8, n) };
                mapping::zero(r);
            }
            14 => {
                let len = self.rng.below(256 << 10) as usize;
                let bytes = self.rng.bytes(len);
                let codec = self.codec();
                let refs = self.ids(false);
                let id = mapping::put_bytes(&bytes, codec, &refs);
                keep(&mut self.settled, id, &mut self.rng);
            }
            15 | 16 => {
                let name = *self.rng.pick(&["ping0", "fuzz", "nope", "", "Target"]);
                let args = if name == "ping0" && self.rng.one_in(2) {
                    Vec::new()
                } else {
                    self.args()
                };
                let options = self.options();
                // The qualified form too: this component by name, one
                // not deployed, names no table holds.
                let ids = if self.rng.one_in(3) {
                    let component = *self.rng.pick(&["fuzz", "nope", "", "fuzz/ping0", "\0"]);
                    tasks::submit_to(component, name, &args, &options)
                } else {
                    tasks::submit(name, &args, &options)
                };
                for id in ids {
                    keep(&mut self.pending, id, &mut self.rng);
                }
            }
            17 => {
                let class = *self.rng.pick(&["Target", "Nope", ""]);
                let args = self.args();
                let options = self.options();
                let actor = if self.rng.one_in(3) {
                    let component = *self.rng.pick(&["fuzz", "nope", ""]);
                    tasks::create_actor_of(component, class, &args, &options)
                } else {
                    tasks::create_actor(class, &args, &options)
                };
                if self.actors.len() < 64 {
                    self.actors.push(actor);
                }
            }
            18 => {
                let actor = if self.actors.is_empty() || self.rng.one_in(4) {
                    self.id(false).task
                } else {
                    *self.rng.pick(&self.actors)
                };
                let method = *self.rng.pick(&["read", "new", "nope"]);
                let args = if method == "read" && self.rng.one_in(2) {
                    Vec::new()
                } else {
                    self.args()
                };
                let options = self.options();
                for id in tasks::call_actor(actor, method, &args, &options) {
                    keep(&mut self.pending, id, &mut self.rng);
                }
            }
            19 => {
                // Not itself: a task that cancels itself ends the run.
                let id = self.id(true);
                let me = runtime::task_id();
                if (id.task.hi, id.task.lo) != (me.hi, me.lo) {
                    tasks::cancel(id, self.rng.one_in(2), self.rng.one_in(2));
                }
            }
            20 => {
                let actor = if self.actors.is_empty() || self.rng.one_in(2) {
                    self.id(false).task
                } else {
                    *self.rng.pick(&self.actors)
                };
                tasks::kill_actor(actor);
            }
            21 => {
                let most = if self.rng.one_in(50) { 200 << 10 } else { 200 };
                let len = self.rng.below(most);
                let text = String::from_utf8_lossy(&self.rng.bytes(len as usize)).into_owned();
                let level = *self.rng.pick(&[
                    wit::LogLevel::Trace,
                    wit::LogLevel::Debug,
                    wit::LogLevel::Info,
                ]);
                runtime::log(level, &text);
            }
            22 => {
                let most = if self.rng.one_in(50) { 4096 } else { 32 };
                let len = self.rng.below(most);
                let name = String::from_utf8_lossy(&self.rng.bytes(len as usize)).into_owned();
                let span = runtime::profile_begin(&name);
                if self.rng.one_in(2) {
                    runtime::profile_end(span);
                } else {
                    runtime::profile_end(self.rng.next() as u32);
                }
            }
            _ => {
                runtime::task_id();
                runtime::node_id();
                runtime::get_gpu_ids();
                runtime::get_resource_ids();
            }
        }
    }
}

/// Makes `calls` random calls from `seed`; (calls made, errors returned).
pub(crate) fn run(seed: u64, calls: u64) -> (u64, u64) {
    let region_len = 256 * 65536;
    let start = grow(256).unwrap_or(0);
    let mut state = State {
        rng: Rng::new(seed),
        settled: Vec::new(),
        pending: Vec::new(),
        making: Vec::new(),
        actors: Vec::new(),
        region: (start, if start == 0 { 65536 } else { region_len }),
        errors: 0,
    };
    for _ in 0..calls {
        state.call();
    }
    (calls, state.errors)
}

/// Grows linear memory by `pages` wasm pages; the start of the new region.
fn grow(pages: usize) -> Option<usize> {
    #[cfg(target_arch = "wasm32")]
    {
        match core::arch::wasm32::memory_grow(0, pages) {
            usize::MAX => None,
            old => Some(old * 65536),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = pages;
        None
    }
}
