//! Per-agent sequence tracking: duplicates and replays are rejected, gaps are counted as loss.
//!
//! Each agent numbers its datagrams 0, 1, 2, … within an epoch (its start time). The tracker
//! remembers, per agent, the current epoch, the highest sequence number seen and a bitmap of the
//! last [`WINDOW`] numbers, so late (reordered) datagrams inside the window are accepted once.
//! Loss is exact, not estimated: `lost = (highest − first + 1) − accepted`, which shrinks again
//! when a late datagram fills a gap. Pure: no clock, no I/O.

use std::collections::HashMap;

/// How far behind the highest sequence number a datagram may arrive and still be accepted.
pub const WINDOW: u64 = 1024;

/// What to do with a datagram, by its (agent, epoch, seq).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// First time seen: accept.
    Accept,
    /// Already accepted once (a replay or a duplicate): drop.
    Duplicate,
    /// Older than the window: drop (it stays counted as lost).
    TooOld,
    /// From an epoch older than the agent's current one: drop.
    StaleEpoch,
}

#[derive(Debug, Clone)]
struct Stream {
    epoch: u64,
    first: u64,
    highest: u64,
    accepted: u64,
    /// Bit i set ⇔ `highest − i` was accepted, for i < WINDOW.
    seen: [u64; (WINDOW / 64) as usize],
    lost_in_past_epochs: u64,
}

impl Stream {
    fn new(epoch: u64, seq: u64, lost_before: u64) -> Stream {
        let mut seen = [0u64; (WINDOW / 64) as usize];
        seen[0] = 1;
        Stream {
            epoch,
            first: seq,
            highest: seq,
            accepted: 1,
            seen,
            lost_in_past_epochs: lost_before,
        }
    }
    fn bit(&self, back: u64) -> bool {
        self.seen[(back / 64) as usize] >> (back % 64) & 1 == 1
    }
    fn set(&mut self, back: u64) {
        self.seen[(back / 64) as usize] |= 1 << (back % 64);
    }
    fn shift(&mut self, by: u64) {
        if by >= WINDOW {
            self.seen = [0; (WINDOW / 64) as usize];
            return;
        }
        let words = (by / 64) as usize;
        let bits = by % 64;
        let n = self.seen.len();
        for i in (0..n).rev() {
            let lo = if i >= words { self.seen[i - words] } else { 0 };
            let lo2 = if i > words { self.seen[i - words - 1] } else { 0 };
            self.seen[i] = if bits == 0 {
                lo
            } else {
                (lo << bits) | (lo2 >> (64 - bits))
            };
        }
    }
    fn lost(&self) -> u64 {
        (self.highest - self.first + 1).saturating_sub(self.accepted) + self.lost_in_past_epochs
    }
}

/// Sequence state of every agent seen.
#[derive(Debug, Clone, Default)]
pub struct SeqTracker {
    streams: HashMap<u32, Stream>,
}

impl SeqTracker {
    /// Records a datagram's (agent, epoch, seq) and says whether to accept it.
    pub fn observe(&mut self, agent: u32, epoch: u64, seq: u64) -> Verdict {
        let Some(s) = self.streams.get_mut(&agent) else {
            self.streams.insert(agent, Stream::new(epoch, seq, 0));
            return Verdict::Accept;
        };
        if epoch < s.epoch {
            return Verdict::StaleEpoch;
        }
        if epoch > s.epoch {
            let lost = s.lost();
            *s = Stream::new(epoch, seq, lost);
            return Verdict::Accept;
        }
        if seq > s.highest {
            s.shift(seq - s.highest);
            s.highest = seq;
            s.set(0);
            s.accepted += 1;
            return Verdict::Accept;
        }
        let back = s.highest - seq;
        if back >= WINDOW {
            return Verdict::TooOld;
        }
        if s.bit(back) {
            return Verdict::Duplicate;
        }
        s.set(back);
        if seq < s.first {
            s.first = seq;
        } else {
            s.accepted += 1;
            return Verdict::Accept;
        }
        // A datagram older than the first one seen extends the stream backwards.
        s.accepted += 1;
        Verdict::Accept
    }

    /// Datagrams known lost from `agent` (gaps not filled so far), over all its epochs.
    pub fn lost(&self, agent: u32) -> u64 {
        self.streams.get(&agent).map_or(0, Stream::lost)
    }

    /// Datagrams accepted from `agent` in its current epoch.
    pub fn accepted(&self, agent: u32) -> u64 {
        self.streams.get(&agent).map_or(0, |s| s.accepted)
    }

    /// Agents seen, with their (accepted in current epoch, lost).
    pub fn agents(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.streams.iter().map(|(a, s)| (*a, s.accepted, s.lost()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_stream_has_no_loss() {
        let mut t = SeqTracker::default();
        for s in 0..3000 {
            assert_eq!(t.observe(7, 1, s), Verdict::Accept);
        }
        assert_eq!(t.lost(7), 0);
        assert_eq!(t.accepted(7), 3000);
    }

    #[test]
    fn gaps_are_loss_until_filled_and_replays_are_duplicates() {
        let mut t = SeqTracker::default();
        for s in [0, 1, 2, 5, 6] {
            assert_eq!(t.observe(1, 9, s), Verdict::Accept);
        }
        assert_eq!(t.lost(1), 2);
        assert_eq!(t.observe(1, 9, 3), Verdict::Accept);
        assert_eq!(t.lost(1), 1);
        assert_eq!(t.observe(1, 9, 3), Verdict::Duplicate);
        assert_eq!(t.observe(1, 9, 6), Verdict::Duplicate);
        assert_eq!(t.lost(1), 1);
    }

    #[test]
    fn old_and_stale_datagrams_are_dropped_and_new_epochs_restart() {
        let mut t = SeqTracker::default();
        t.observe(1, 5, 0);
        t.observe(1, 5, 2000);
        assert_eq!(t.observe(1, 5, 1), Verdict::TooOld);
        assert_eq!(t.observe(1, 4, 0), Verdict::StaleEpoch);
        let lost_before = t.lost(1);
        assert_eq!(lost_before, 1999);
        assert_eq!(t.observe(1, 6, 0), Verdict::Accept);
        assert_eq!(t.lost(1), lost_before, "loss of past epochs is kept");
    }

    #[test]
    fn window_shift_across_word_boundaries_keeps_history() {
        let mut t = SeqTracker::default();
        for s in (0..400).step_by(3) {
            t.observe(2, 0, s);
        }
        for s in (0..400).step_by(3) {
            assert_eq!(t.observe(2, 0, s), Verdict::Duplicate, "seq {s}");
        }
        assert_eq!(t.observe(2, 0, 1), Verdict::Accept);
    }
}
