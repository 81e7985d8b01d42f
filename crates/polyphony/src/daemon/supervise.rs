//! Keeps a long-lived background task of the daemon running: when the task returns an error or
//! panics, it is logged, counted in a Prometheus counter, and started again after an
//! exponential backoff (reset once the task has run healthily for a while). A task that returns
//! `Ok(())` has stopped on purpose and is not restarted.
//!
//! Used for the embedded Workfeed aggregator's receive loop ([`super::feed`]). Touches nothing
//! but the tokio runtime, the log and the counter it is given.

use prometheus_client::metrics::counter::Counter;
use std::future::Future;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{error, info};

/// How long to wait before each restart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Wait before the first restart.
    pub initial: Duration,
    /// The wait doubles on each consecutive failure up to this.
    pub max: Duration,
    /// A run at least this long counts as healthy: the next failure waits `initial` again.
    pub healthy_after: Duration,
}

impl Backoff {
    /// The daemon's default: 1 s, doubling to 60 s, reset after 5 minutes of healthy running.
    pub const DEFAULT: Backoff = Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(60),
        healthy_after: Duration::from_secs(300),
    };
}

/// Spawns `make()` on the runtime and restarts it whenever it fails (an `Err` or a panic),
/// waiting per `backoff`, incrementing `restarts` and logging each restart with `what` and the
/// error. Returns when a run of the task returns `Ok(())`. Aborting the returned handle stops
/// the supervisor and the task it is running.
pub fn supervise<F, Fut, E>(what: &'static str, mut make: F, backoff: Backoff, restarts: Counter) -> JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    tokio::spawn(async move {
        let mut wait = backoff.initial;
        loop {
            let started = Instant::now();
            // A task of its own, so that a panic ends only this run; aborting the supervisor
            // drops `run`, which aborts the task too.
            let mut run = AbortOnDrop(tokio::spawn(make()));
            let why = match (&mut run.0).await {
                Ok(Ok(())) => {
                    info!("{what} stopped");
                    return;
                }
                Ok(Err(e)) => e.to_string(),
                Err(e) => format!("the task panicked or was cancelled: {e}"),
            };
            if started.elapsed() >= backoff.healthy_after {
                wait = backoff.initial;
            }
            let n = restarts.inc() + 1;
            error!(restarts = n, "{what} failed: {why}; restarting in {wait:?}");
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(backoff.max);
        }
    })
}

/// Aborts the task when dropped.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    const FAST: Backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(80),
        healthy_after: Duration::from_secs(60),
    };

    /// The instants at which the task was started, and how many runs happened.
    fn recorder() -> (Arc<Mutex<Vec<Instant>>>, Arc<AtomicU32>) {
        (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicU32::new(0)))
    }

    #[tokio::test]
    async fn a_failing_task_is_restarted_with_growing_waits_and_counted() {
        let (starts, runs) = recorder();
        let restarts = Counter::default();
        let (s, r) = (starts.clone(), runs.clone());
        // Fails with a real I/O error four times, then serves until aborted.
        let h = supervise(
            "test task",
            move || {
                s.lock().unwrap().push(Instant::now());
                let n = r.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < 4 {
                        Err(std::io::Error::other(format!("socket failed, run {n}")))
                    } else {
                        std::future::pending::<Result<(), std::io::Error>>().await
                    }
                }
            },
            FAST,
            restarts.clone(),
        );
        for _ in 0..200 {
            if runs.load(Ordering::SeqCst) >= 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            5,
            "four failures, then a fifth run that lasts"
        );
        assert_eq!(restarts.get(), 4);
        let t = starts.lock().unwrap().clone();
        // Waits of at least 20, 40, 80 and 80 ms (doubling, capped at `max`).
        for (i, min) in [20u64, 40, 80, 80].iter().enumerate() {
            let gap = t[i + 1] - t[i];
            assert!(gap >= Duration::from_millis(*min), "wait {i}: {gap:?} < {min} ms");
        }
        assert!(!h.is_finished(), "the supervisor keeps the healthy run going");
        h.abort();
    }

    #[tokio::test]
    async fn a_panicking_task_is_restarted_and_a_clean_stop_is_final() {
        let (_, runs) = recorder();
        let restarts = Counter::default();
        let r = runs.clone();
        let h = supervise(
            "test task",
            move || {
                let n = r.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        panic!("the first run panics");
                    }
                    Ok::<(), std::io::Error>(())
                }
            },
            FAST,
            restarts.clone(),
        );
        tokio::time::timeout(Duration::from_secs(10), h)
            .await
            .expect("the supervisor returns after the clean stop")
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(restarts.get(), 1);
    }

    #[tokio::test]
    async fn aborting_the_supervisor_stops_the_task() {
        let dropped = Arc::new(AtomicU32::new(0));
        struct Flag(Arc<AtomicU32>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let d = dropped.clone();
        let h = supervise(
            "test task",
            move || {
                let flag = Flag(d.clone());
                async move {
                    let _flag = flag;
                    std::future::pending::<Result<(), std::io::Error>>().await
                }
            },
            FAST,
            Counter::default(),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        h.abort();
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the running task was dropped");
    }
}
