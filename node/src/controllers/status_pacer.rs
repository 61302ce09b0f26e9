//! Paces each placement's status writes by the status's size. A
//! placement's status holds one entry per chosen cluster (about 1.4 KB
//! each), and while its Works report in, every pass finds it changed: a
//! PickAll over 5,000 clusters rewrote a status of several megabytes back
//! to back, each one a Raft entry every node decodes, stores and fsyncs,
//! and large enough to miss the heartbeat-long AppendEntries deadline on
//! a busy machine. So a placement's status is written at most once per
//! [`PER_ENTRY`] × its entries (1 s at 5,000 clusters, 10 ms at 50);
//! a pass that finds it too soon asks to be run again when the time is up.
//!
//! Soft state of one leadership session: a new leader writes at once,
//! which is the outcome the pacing only postpones (nothing waits on it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fleet_api::ObjectKey;

/// The interval between two status writes of one placement, per entry.
pub const PER_ENTRY: Duration = Duration::from_micros(200);

/// Placements whose pacing is remembered before the stale ones are dropped.
const REMEMBERED: usize = 4096;
/// Age after which a write no longer paces the next one.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// When each placement's status was last written in this session.
#[derive(Default)]
pub struct StatusPacer {
    last: Mutex<HashMap<ObjectKey, Instant>>,
}

impl StatusPacer {
    /// How long until a status of `entries` per-cluster entries may be
    /// written for `key` (`None`: now), without recording anything: a pass
    /// that may not write the status need not compute it.
    pub fn wait(&self, key: &ObjectKey, entries: usize, now: Instant) -> Option<Duration> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        Self::wait_locked(&last, key, entries, now)
    }

    fn wait_locked(
        last: &HashMap<ObjectKey, Instant>,
        key: &ObjectKey,
        entries: usize,
        now: Instant,
    ) -> Option<Duration> {
        let interval = PER_ENTRY.saturating_mul(u32::try_from(entries).unwrap_or(u32::MAX));
        let due = *last.get(key)? + interval;
        (now < due).then(|| due - now)
    }

    /// Whether a status of `entries` per-cluster entries may be written for
    /// `key` at `now`: `None` if so (and the write is recorded), otherwise
    /// how long until it may.
    pub fn admit(&self, key: &ObjectKey, entries: usize, now: Instant) -> Option<Duration> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(wait) = Self::wait_locked(&last, key, entries, now) {
            return Some(wait);
        }
        if last.len() >= REMEMBERED {
            // Drop what no longer paces anything (a minute is the interval
            // of 300,000 entries).
            last.retain(|_, at| now.saturating_duration_since(*at) < FORGET_AFTER);
        }
        last.insert(key.clone(), now);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("placement.kubernetes-fleet.io", "ClusterResourcePlacement", "", name)
    }

    #[test]
    fn a_large_status_waits_its_interval_and_a_small_one_hardly_at_all() {
        let pacer = StatusPacer::default();
        let t0 = Instant::now();
        assert_eq!(pacer.wait(&key("big"), 5000, t0), None);
        assert_eq!(pacer.admit(&key("big"), 5000, t0), None);
        // Asking does not record a write.
        assert_eq!(pacer.wait(&key("big"), 5000, t0 + Duration::from_millis(400)), Some(Duration::from_millis(600)));
        assert_eq!(pacer.admit(&key("big"), 5000, t0 + Duration::from_millis(400)), Some(Duration::from_millis(600)));
        assert_eq!(pacer.admit(&key("big"), 5000, t0 + Duration::from_secs(1)), None);
        // Another placement is paced on its own.
        assert_eq!(pacer.admit(&key("small"), 50, t0), None);
        assert_eq!(pacer.admit(&key("small"), 50, t0 + Duration::from_millis(10)), None);
        assert_eq!(pacer.admit(&key("small"), 0, t0 + Duration::from_millis(10)), None);
    }

    #[test]
    fn stale_placements_are_forgotten_once_many_are_remembered() {
        let pacer = StatusPacer::default();
        let t0 = Instant::now();
        for i in 0..REMEMBERED {
            assert_eq!(pacer.admit(&key(&format!("p{i}")), 1, t0), None);
        }
        let later = t0 + Duration::from_secs(61);
        assert_eq!(pacer.admit(&key("new"), 1, later), None);
        assert_eq!(pacer.last.lock().unwrap().len(), 1);
    }
}
