//! Pinning worker threads to cores (`sched_setaffinity`), so that a node
//! given fewer CPUs than the machine has really uses only that many cores.

/// The cores this process may run on, ascending (all of `0..n` where the
/// affinity mask cannot be read).
pub fn allowed_cpus() -> Vec<u32> {
    // SAFETY: `set` is a plain bit mask, zeroed, and the kernel writes at
    // most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let cpus: Vec<u32> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&i| libc::CPU_ISSET(i, &set))
                .map(|i| i as u32)
                .collect();
            if !cpus.is_empty() {
                return cpus;
            }
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n as u32).collect()
}

thread_local! {
    /// The cores this thread was last pinned to (a syscall is only made when
    /// they change).
    static PINNED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Restricts the calling thread to `cpus` (all allowed cores when empty).
/// Best effort: a failure is logged, the task runs unpinned.
pub fn pin_current_thread(cpus: &[u32], allowed: &[u32]) {
    let cpus = if cpus.is_empty() { allowed } else { cpus };
    let unchanged = PINNED.with(|p| {
        let mut p = p.borrow_mut();
        if p.as_slice() == cpus {
            return true;
        }
        p.clear();
        p.extend_from_slice(cpus);
        false
    });
    if unchanged {
        return;
    }
    // SAFETY: as in `allowed_cpus`; CPU_SET ignores ids past the set's size.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if (c as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c as usize, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        tracing::debug!(
            "cannot pin a worker to cores {}: {}",
            cpus.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            std::io::Error::last_os_error()
        );
    }
}

/// The CPU ids of a node with `num_cpus` CPUs, and whether to pin: the
/// first `num_cpus` allowed cores, pinned when that is fewer than all; with
/// more CPUs than cores, units `0..num_cpus`, unpinned (oversubscribed).
pub fn node_cpus(num_cpus: usize) -> (Vec<u32>, bool) {
    let allowed = allowed_cpus();
    if num_cpus <= allowed.len() {
        let pin = num_cpus < allowed.len();
        (allowed.into_iter().take(num_cpus).collect(), pin)
    } else {
        ((0..num_cpus as u32).collect(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_one_core_runs_there() {
        let allowed = allowed_cpus();
        let last = *allowed.last().unwrap();
        let (ids, pin) = node_cpus(1);
        assert_eq!((ids.len(), pin), (1, allowed.len() > 1));
        std::thread::spawn(move || {
            pin_current_thread(&[last], &allowed);
            // SAFETY: plain libc call.
            let cpu = unsafe { libc::sched_getcpu() };
            assert_eq!(cpu, last as i32);
            // Unpinned again: every allowed core.
            pin_current_thread(&[], &allowed);
            assert_eq!(allowed_cpus(), allowed);
        })
        .join()
        .unwrap();
    }
}
