//! A flow as one link of `flowsim` sees it (the per-link lists of the plan).

/// A flow as one link sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkFlow {
    pub flow: u32,
    pub start: f64,
    /// Wire bytes (payload and headers).
    pub work: f64,
    pub size: u64,
    pub class: u8,
    /// What the flow needs on this link when it has it to itself (ns): its wire bytes at the
    /// slower of this link and the flow's bottleneck. A flow cannot go faster than its
    /// bottleneck, so on a faster link (a fabric's uplinks) sharing costs it nothing until its
    /// share drops below that rate.
    pub idle: f64,
    /// The flow's base RTT (ns) on the first simulated link of its path, 0 on the others: a
    /// slow-start round costs one RTT however many links the flow crosses.
    pub rtt: f64,
}
