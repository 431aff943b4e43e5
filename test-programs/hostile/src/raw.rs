//! Helpers for calling the raw `wray:runtime` imports: linear memory grown
//! by hand, windows over it, forged ids, error text.

pub(crate) use wray::__private::bindings::types as wit;
pub(crate) use wray::__private::bindings::{mapping, objects, runtime, tasks};

/// A wasm page.
pub(crate) const WASM_PAGE: usize = 65536;

/// Grows linear memory by `pages` wasm pages; the start of the new region.
pub(crate) fn grow(pages: usize) -> Result<usize, String> {
    #[cfg(target_arch = "wasm32")]
    {
        match core::arch::wasm32::memory_grow(0, pages) {
            usize::MAX => Err(format!("memory.grow of {pages} pages failed")),
            old => Ok(old * WASM_PAGE),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = pages;
        Err("no linear memory natively".into())
    }
}

/// `len` bytes of linear memory at `addr`, as a list for the imports.
pub(crate) fn window(addr: usize, len: usize) -> &'static [u8] {
    // SAFETY: the caller grew memory over `addr..addr + len` (or passes a
    // deliberately bogus range that the host must refuse; linear memory
    // below its size is always addressable in wasm).
    unsafe { core::slice::from_raw_parts(addr as *const u8, len) }
}

/// The running task's id.
pub(crate) fn me() -> wit::TaskId {
    runtime::task_id()
}

/// An object id of another (made-up) job.
pub(crate) fn foreign_id(index: u32) -> wit::ObjectId {
    wit::ObjectId {
        task: wit::TaskId {
            hi: 0x5eed_5eed_5eed_5eed,
            lo: 0x0bad_0bad_0bad_0bad,
        },
        index,
    }
}

/// An object id of this task's own job that names no object.
pub(crate) fn unknown_id_of_my_job(index: u32) -> wit::ObjectId {
    wit::ObjectId {
        task: wit::TaskId {
            hi: me().hi,
            lo: 0x0123_4567_89ab_cdef,
        },
        index,
    }
}

/// The id of this task's `k`-th put (0-based).
pub(crate) fn my_put(k: u32) -> wit::ObjectId {
    wit::ObjectId {
        task: me(),
        index: 0x8000_0000 | k,
    }
}

/// `{kind}: {message}` of a raw task error.
pub(crate) fn text(e: &wit::TaskError) -> String {
    format!("{}: {}", wray::ErrorKind::from(e.kind), e.message)
}

/// The kind of a raw result's error, or `ok`.
pub(crate) fn kind<T>(r: &Result<T, wit::TaskError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => wray::ErrorKind::from(e.kind).to_string(),
    }
}

/// Options with `n` returns, nothing else set.
pub(crate) fn returns(n: u32) -> wit::TaskOptions {
    wit::TaskOptions {
        detached: false,
        num_returns: n,
        resources: wit::ResourceRequest {
            num_cpus: None,
            num_gpus: None,
            memory: None,
            custom: Vec::new(),
        },
        limits: wit::Limits {
            max_memory: None,
            timeout_ms: None,
            fuel: None,
        },
        result_codec: None,
    }
}

/// A raw payload of `data` with `refs`.
pub(crate) fn payload(codec: wit::Codec, data: Vec<u8>, refs: Vec<wit::ObjectId>) -> wit::Payload {
    wit::Payload { codec, data, refs }
}

/// An object of `len` bytes of `byte`, made with reserve/write/seal (so it
/// lives in the shared-memory store whatever its size).
pub(crate) fn shared_object(len: usize, byte: u8) -> Result<wit::ObjectId, String> {
    let id = mapping::reserve(len as u64).map_err(|e| text(&e))?;
    mapping::write(id, 0, &vec![byte; len]).map_err(|e| text(&e))?;
    mapping::seal(id, len as u64, wit::Codec::Raw, &[]).map_err(|e| text(&e))?;
    Ok(id)
}
