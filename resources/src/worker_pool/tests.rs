use super::*;
use std::sync::mpsc;

#[test]
fn many_tiny_jobs_use_no_more_threads_than_cpus() {
    let pool = WorkerPool::new(2, 8);
    let (tx, rx) = mpsc::channel();
    for i in 0..20_000u32 {
        let tx = tx.clone();
        pool.spawn(move |_| tx.send(i).unwrap());
    }
    let mut got: Vec<u32> = (0..20_000)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    got.sort_unstable();
    assert!(got.into_iter().eq(0..20_000), "every job ran once");
    let stats = pool.stats();
    assert!(stats.peak <= 2, "{stats:?}");
    assert_eq!(stats.max_threads, 12, "2 CPUs, 2 lent slots, 8 blocked");
}

/// A wait looks before sleeping on a pool's worker and on a thread of
/// its own (a driver's), never on a runtime's thread serving many
/// calls: as its caller says, whatever thread it is on.
#[test]
fn only_waits_on_a_runtime_thread_never_look_before_sleeping() {
    assert!(!WaitingThread::Runtime.looks_first());
    assert!(WaitingThread::Own.looks_first());
    let pool = WorkerPool::new(1, 1);
    let (tx, rx) = mpsc::channel();
    pool.spawn(move |worker| {
        let thread = WaitingThread::Worker(worker.clone());
        tx.send((thread.looks_first(), thread.worker().is_some()))
            .unwrap();
    });
    assert_eq!(rx.recv().unwrap(), (true, true));
}

/// Jobs queued while a worker looks for one (right after its last
/// job), as it stops looking, and once it sleeps: each runs, and
/// bursts queued while it looks are spread over the pool's threads
/// (a job queued while only one thread looks wakes a sleeping one).
#[test]
fn jobs_queued_while_a_worker_looks_for_one_all_run_without_a_lost_wakeup() {
    let pool = WorkerPool::new(2, 8);
    let (tx, rx) = mpsc::channel();
    let mut expected = 0u32;
    for round in 0..600u32 {
        // Gaps from none to past the looking time, so that jobs land
        // before, during and after a worker's look.
        let gap = SPIN_BEFORE_PARKING * (round % 7) / 4;
        let burst = 1 + round % 4;
        for _ in 0..burst {
            let tx = tx.clone();
            pool.spawn(move |_| tx.send(()).unwrap());
        }
        expected += burst;
        for _ in 0..burst {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("round {round}: a job never ran ({e})"));
        }
        std::thread::sleep(gap);
    }
    assert!(rx.try_recv().is_err(), "{expected} jobs, each ran once");
    let stats = pool.stats();
    assert!(stats.peak <= 2, "{stats:?}");
    // A burst of two needs both threads at once: queued while one
    // thread looks (it just ran a job) and the other sleeps, the
    // second job wakes the sleeping one.
    std::thread::sleep(SPIN_BEFORE_PARKING * 20);
    let (tx, rx) = mpsc::channel();
    let ran = tx.clone();
    pool.spawn(move |_| ran.send(()).unwrap());
    rx.recv_timeout(Duration::from_secs(10)).expect("ran");
    let barrier = Arc::new(std::sync::Barrier::new(2));
    for _ in 0..2 {
        let (tx, barrier) = (tx.clone(), barrier.clone());
        pool.spawn(move |_| {
            barrier.wait();
            tx.send(()).unwrap();
        });
    }
    // Well within `KEEP_ALIVE`, after which a sleeping thread looks at
    // the queue by itself.
    for _ in 0..2 {
        rx.recv_timeout(KEEP_ALIVE / 2)
            .expect("two jobs that wait for each other ran at once");
    }
}

/// Job `depth` of a chain: spawns job `depth - 1` and blocks until it
/// has answered (as a task blocked in `get` on its child), then
/// answers `depth` plus what it got.
fn chain(
    pool: &Arc<WorkerPool>,
    worker: &Worker,
    depth: u32,
    answer: mpsc::Sender<Result<u32, String>>,
) {
    if depth == 0 {
        let _ = answer.send(Ok(0));
        return;
    }
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    pool.spawn(move |w| chain(&p, w, depth - 1, tx));
    let Some(blocked) = worker.block() else {
        let _ = answer.send(Err(format!("refused at depth {depth}")));
        return;
    };
    let got = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|e| e.to_string())
        .and_then(|got| got);
    // Unblocked before answering, so the asker sees the count back.
    drop(blocked);
    // The asker is gone when the chain was refused below it.
    let _ = answer.send(got.map(|v| v + depth));
}

#[test]
fn a_chain_of_blocked_jobs_deeper_than_the_cpus_completes() {
    let pool = Arc::new(WorkerPool::new(1, 64));
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    pool.spawn(move |w| chain(&p, w, 20, tx));
    let sum = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(sum, Ok((1..=20).sum()));
    let stats = pool.stats();
    // One thread per blocked job, plus the CPU's: never more.
    assert!(stats.peak > 1 && stats.peak <= 21, "{stats:?}");
    assert_eq!(stats.blocked, 0);
}

#[test]
fn a_wait_past_the_blocked_bound_is_refused_not_a_hang() {
    let pool = Arc::new(WorkerPool::new(1, 3));
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    pool.spawn(move |w| chain(&p, w, 10, tx));
    // Depths 10, 9 and 8 block; 7 is refused and the chain unwinds.
    let got = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(got, Err("refused at depth 7".to_string()));
    assert!(pool.stats().peak <= 4, "{:?}", pool.stats());
}

#[test]
fn light_jobs_run_together_past_the_cpus_within_the_extra_threads() {
    let pool = WorkerPool::new(1, 3);
    // Three light jobs that only end together: they need three threads
    // on a one-CPU pool.
    let barrier = Arc::new(std::sync::Barrier::new(3));
    let (tx, rx) = mpsc::channel();
    for _ in 0..3 {
        let (barrier, tx) = (barrier.clone(), tx.clone());
        pool.spawn_light(move |_| {
            barrier.wait();
            tx.send(()).unwrap();
        });
    }
    for _ in 0..3 {
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    let stats = pool.stats();
    assert!(stats.peak >= 3 && stats.peak <= 4, "{stats:?}");
}

#[test]
fn a_thread_not_of_the_pool_blocks_without_raising_the_bound() {
    let pool = WorkerPool::new(1, 0);
    for thread in [WaitingThread::Own, WaitingThread::Runtime] {
        let guard = thread.block();
        assert!(guard.is_some(), "a driver's wait is never refused");
        assert_eq!(pool.stats().blocked, 0);
    }
}

/// A wait inside a wait on one worker counts it blocked once, and a
/// worker that lent its slot gets it back when its job ends.
#[test]
fn a_worker_is_blocked_once_and_its_lent_slot_comes_back() {
    let pool = Arc::new(WorkerPool::new(1, 4));
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    pool.spawn(move |worker| {
        let outer = worker.block();
        let inner = worker.block();
        let blocked = p.stats().blocked;
        drop((inner, outer));
        worker.lend_slot();
        worker.lend_slot();
        let lent = p.shared.state.lock().lent;
        tx.send((blocked, p.stats().blocked, lent)).unwrap();
    });
    let got = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(got, (1, 0, 1), "(blocked, after, lent)");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pool.shared.state.lock().lent != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the slot never came back"
        );
        std::thread::yield_now();
    }
}

#[test]
fn concurrent_workers_have_distinct_names() {
    let pool = WorkerPool::new(2, 8);
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let (tx, rx) = mpsc::channel();
    for _ in 0..2 {
        let (barrier, tx) = (barrier.clone(), tx.clone());
        pool.spawn(move |_| {
            barrier.wait();
            tx.send(std::thread::current().name().map(str::to_string))
                .unwrap();
        });
    }
    let mut names: Vec<_> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [Some("wray-worker-0".into()), Some("wray-worker-1".into())]
    );
}

#[test]
fn idle_threads_are_reused() {
    let pool = WorkerPool::new(64, 8);
    let (tx, rx) = mpsc::channel();
    for i in 0..100 {
        let tx = tx.clone();
        pool.spawn(move |_| tx.send(i).unwrap());
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        // Until the thread is back waiting (a state, not a delay).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.stats().idle == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the worker never went idle"
            );
            std::thread::yield_now();
        }
    }
    assert_eq!(pool.threads(), 1, "one thread ran 100 jobs in turn");
}

#[test]
fn closing_waits_for_busy_threads_and_a_panicking_job_is_survived() {
    let pool = WorkerPool::new(4, 8);
    pool.spawn(|_| panic!("a bug"));
    let (started_tx, started) = mpsc::channel();
    let (tx, rx) = mpsc::channel();
    pool.spawn(move |_| {
        started_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        tx.send(()).unwrap();
    });
    started.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(pool.close(Duration::from_secs(10)), 0);
    assert!(rx.try_recv().is_ok(), "the busy job ran to its end");
    // A closed pool takes no more jobs.
    pool.spawn(|_| unreachable!());
    assert_eq!(pool.threads(), 0);
}

/// Tasks run with `spawn_task` park while they wait: a thousand of them
/// waiting at once on a one-CPU pool with no extra threads hold no thread
/// each, and each resumes (on whichever thread is free) when woken; a
/// task woken while it is polled is polled again at once.
#[test]
fn a_thousand_parked_tasks_hold_no_thread_and_each_resumes_when_woken() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let pool = WorkerPool::new(1, 0);
    let (done_tx, done) = mpsc::channel();
    let mut gates = Vec::new();
    for i in 0..1000u32 {
        let (gate, opened) = tokio::sync::oneshot::channel::<u32>();
        gates.push(gate);
        let done_tx = done_tx.clone();
        pool.spawn_task(false, rt.handle().clone(), move |thread| {
            Box::pin(async move {
                let parked = thread.block().expect("under the bound");
                // Woken while polled (a computing guest's yield): polled
                // again at once, not parked.
                tokio::task::yield_now().await;
                let v = opened.await.unwrap();
                drop(parked);
                done_tx.send(v + i).unwrap();
            })
        });
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pool.stats().suspended < 1000 {
        assert!(std::time::Instant::now() < deadline, "{:?}", pool.stats());
        std::thread::yield_now();
    }
    for gate in gates {
        gate.send(1).unwrap();
    }
    let mut got: Vec<u32> = (0..1000)
        .map(|_| done.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    got.sort_unstable();
    assert!(got.into_iter().eq(1..=1000), "each resumed once");
    let stats = pool.stats();
    assert_eq!(stats.peak, 1, "{stats:?}");
    assert_eq!((stats.suspended, stats.suspended_peak), (0, 1000));
}
