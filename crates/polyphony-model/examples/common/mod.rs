//! Helpers shared by the examples: the paper's objective J, random configurations from the
//! default knob space, rank statistics, the workload sample from the command line
//! (`sample.rs`), the correction examples' forest fit (`forest.rs`) and a round-level replay of the
//! switch ports (`replay.rs`).
#![allow(dead_code)]

pub mod forest;
pub mod pktcache;
pub mod replay;
pub mod sample;

#[allow(unused_imports)] // each example uses some of them
pub use polyphony_model::validation::{objective, random_config, spearman};

/// This thread's CPU time in seconds (NaN if the clock cannot be read).
/// `CLOCK_THREAD_CPUTIME_ID` brings the thread's run time up to date when read (nanoseconds);
/// `/proc/thread-self/schedstat` is only updated at scheduler ticks (4 ms on this kernel),
/// too coarse for a batch that takes a millisecond or two.
pub fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call; the clock id is
    // a constant the C library defines. (std has no thread CPU clock.)
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc == 0 {
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    } else {
        f64::NAN
    }
}

/// `f` applied to every item on `threads` worker threads (items taken in order as workers
/// free up); the results in item order, or the first error.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(x) = items.get(i) else { return Ok(()) };
                        let r = f(x)?;
                        done.lock()
                            .map_err(|_| anyhow::anyhow!("a worker panicked"))?
                            .push((i, r));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| anyhow::anyhow!("a worker panicked"))??;
        }
        Ok(())
    })?;
    let mut done = done.into_inner().map_err(|_| anyhow::anyhow!("a worker panicked"))?;
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// Which random cases of `polyphony_model::validation` an example runs.
#[derive(clap::Args)]
pub struct CaseArgs {
    /// Seed set: `dev` or `validation`.
    #[arg(long, default_value = "dev")]
    pub set: String,
    /// Number of cases (scenarios), at least 1; every 18 consecutive cases cover every regime once.
    #[arg(long, default_value_t = 36, value_parser = clap::value_parser!(u64).range(1..))]
    pub cases: u64,
    /// First case index.
    #[arg(long, default_value_t = 0)]
    pub first: u64,
}

impl CaseArgs {
    /// The seed set and the case indices.
    pub fn range(&self) -> anyhow::Result<(polyphony_model::validation::SeedSet, std::ops::Range<u64>)> {
        let set = polyphony_model::validation::SeedSet::parse(&self.set).map_err(|e| anyhow::anyhow!("--set: {e}"))?;
        Ok((set, self.first..self.first.saturating_add(self.cases)))
    }
}

/// Per configuration, the first window's output with each class's p99 replaced by the median
/// over the windows that completed flows of it: a p99 of the scenario rather than of one draw.
pub fn median_p99(
    windows: &[Vec<polyphony_model::ModelOutput>],
    classes: &[polyphony_spec::TrafficClass],
) -> Vec<polyphony_model::ModelOutput> {
    let Some(first) = windows.first() else {
        return Vec::new();
    };
    let mut out = first.clone();
    for (k, o) in out.iter_mut().enumerate() {
        for cl in classes {
            let v: Vec<f64> = windows
                .iter()
                .filter_map(|w| w.get(k))
                .filter_map(|d| d.sli.get(cl.dscp))
                .filter(|s| s.flows > 0 && s.p99 > 0.0)
                .map(|s| s.p99)
                .collect();
            if let Some(s) = o.sli.classes.iter_mut().find(|s| s.dscp == cl.dscp) {
                if !v.is_empty() {
                    s.p99 = polyphony_model::validation::median(&v);
                }
            }
        }
    }
    out
}
