//! An output-queued port: one FIFO per class, deficit round robin by weight (work-conserving),
//! a shared buffer limit plus optional per-class limits, ECN marking state, and statistics.
//! Packets are indices into the simulator's packet slab; this module never allocates per packet
//! (the per-class `VecDeque`s grow to their high-water mark and stay there).

use std::collections::VecDeque;

/// Per-port statistics over the simulator's statistics window.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PortStats {
    /// Link id of the port.
    pub link: u32,
    /// Wire bytes transmitted per class inside the window.
    pub tx_bytes: Vec<u64>,
    /// Time-averaged queue length per class over the window, in bytes.
    pub avg_queue: Vec<f64>,
    /// Largest queue length per class seen, in bytes.
    pub max_queue: Vec<u64>,
    /// Packets dropped at this port (whole run).
    pub drops: u64,
    /// Packets CE-marked at this port (whole run).
    pub marks: u64,
}

pub(crate) struct Port {
    pub rate: u64,
    pub delay: u64,
    pub switch: bool,
    pub busy: bool,
    q: Vec<VecDeque<u32>>,
    pub qbytes: Vec<u64>,
    total: u64,
    deficit: Vec<i64>,
    cur: usize,
    granted: bool,
    pub limit: u64,
    // statistics
    tx_bytes: Vec<u64>,
    area: Vec<f64>,
    max_q: Vec<u64>,
    last_t: u64,
    pub drops: u64,
    pub marks: u64,
}

impl Port {
    pub fn new(rate: u64, delay: u64, switch: bool, classes: usize, limit: u64) -> Port {
        Port {
            rate,
            delay,
            switch,
            busy: false,
            q: (0..classes).map(|_| VecDeque::new()).collect(),
            qbytes: vec![0; classes],
            total: 0,
            deficit: vec![0; classes],
            cur: 0,
            granted: false,
            limit,
            tx_bytes: vec![0; classes],
            area: vec![0.0; classes],
            max_q: vec![0; classes],
            last_t: 0,
            drops: 0,
            marks: 0,
        }
    }

    /// Serialisation time of `bytes` at this port's rate, rounded up.
    #[inline]
    pub fn ser(&self, bytes: u64) -> u64 {
        (bytes * 8_000_000_000).div_ceil(self.rate)
    }

    /// Accumulates the queue-length integral up to `now`, clipped to the window.
    #[inline]
    fn touch(&mut self, now: u64, win: (u64, u64)) {
        let a = self.last_t.clamp(win.0, win.1);
        let b = now.clamp(win.0, win.1);
        if b > a {
            let dt = (b - a) as f64;
            for (ar, &q) in self.area.iter_mut().zip(&self.qbytes) {
                *ar += q as f64 * dt;
            }
        }
        self.last_t = now;
    }

    /// Whether a packet of `bytes` fits (shared and class limit).
    #[inline]
    pub fn fits(&self, class: usize, bytes: u64, class_limit: Option<u64>) -> bool {
        self.total + bytes <= self.limit && class_limit.is_none_or(|l| self.qbytes[class] + bytes <= l)
    }

    #[inline]
    pub fn push(&mut self, class: usize, pkt: u32, bytes: u64, now: u64, win: (u64, u64)) {
        self.touch(now, win);
        self.q[class].push_back(pkt);
        self.qbytes[class] += bytes;
        self.total += bytes;
        if self.qbytes[class] > self.max_q[class] {
            self.max_q[class] = self.qbytes[class];
        }
    }

    /// Deficit round robin: the next packet to transmit. `size` gives a packet's wire bytes,
    /// `quantum` each class's quantum (proportional to its weight).
    #[inline]
    pub fn pop(&mut self, quantum: &[i64], size: impl Fn(u32) -> u64, now: u64, win: (u64, u64)) -> Option<u32> {
        if self.total == 0 {
            return None;
        }
        let n = self.q.len();
        loop {
            let c = self.cur;
            if let Some(&head) = self.q[c].front() {
                if !self.granted {
                    self.deficit[c] += quantum[c];
                    self.granted = true;
                }
                let b = size(head);
                if b as i64 <= self.deficit[c] {
                    self.touch(now, win);
                    self.q[c].pop_front();
                    self.deficit[c] -= b as i64;
                    self.qbytes[c] -= b;
                    self.total -= b;
                    if now >= win.0 && now < win.1 {
                        self.tx_bytes[c] += b;
                    }
                    if self.q[c].is_empty() {
                        self.deficit[c] = 0;
                        self.granted = false;
                        self.cur = (c + 1) % n;
                    }
                    return Some(head);
                }
            }
            self.granted = false;
            self.cur = (c + 1) % n;
        }
    }

    pub fn queued_packets(&self) -> u64 {
        self.q.iter().map(|q| q.len() as u64).sum()
    }

    pub fn stats(&mut self, link: u32, end: u64, win: (u64, u64)) -> PortStats {
        self.touch(end, win);
        let span = (end.clamp(win.0, win.1) - win.0).max(1) as f64;
        PortStats {
            link,
            tx_bytes: self.tx_bytes.clone(),
            avg_queue: self.area.iter().map(|a| a / span).collect(),
            max_queue: self.max_q.clone(),
            drops: self.drops,
            marks: self.marks,
        }
    }
}
