//! Helpers shared by the examples: the paper's objective J, random configurations from the
//! default knob space, rank statistics, and the workload sample from the command line
//! (`sample.rs`).
#![allow(dead_code)]

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
