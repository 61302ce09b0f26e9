//! Loopback ports for the processes a test starts, which must know each
//! other's addresses before any of them listens. A port bound and released
//! at once (port 0) is one the kernel may hand the next moment to another
//! test's outgoing connection or server, and a node that then fails to
//! listen is a flaky test. So ports come from below the kernel's ephemeral
//! range (never given to outgoing connections), each reserved by a file
//! that parallel test processes agree on, and checked free by binding.

use std::collections::hash_map::RandomState;
use std::fs::{self, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Ports handed out: below Linux's default ephemeral range (32768-60999).
const FIRST: u16 = 20_000;
const LAST: u16 = 32_000;
/// A reservation holds for one to two periods: longer than any test runs.
const PERIOD_SECONDS: u64 = 3_600;

/// The directory of this period's reservations (and the previous one's).
fn period_dirs() -> (PathBuf, PathBuf) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let period = now / PERIOD_SECONDS;
    let root = std::env::temp_dir().join("fleet-test-ports");
    // Older periods' reservations have run out: their files can go.
    if let Ok(entries) = fs::read_dir(&root) {
        for entry in entries.flatten() {
            let stale = entry.file_name().to_str().and_then(|n| n.parse::<u64>().ok()).is_some_and(|p| p + 1 < period);
            if stale {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    (root.join(period.to_string()), root.join(period.saturating_sub(1).to_string()))
}

/// A pseudo-random candidate port.
fn candidate() -> u16 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    FIRST + (hasher.finish() % u64::from(LAST - FIRST)) as u16
}

/// A loopback port reserved for this test process: free now, and given to
/// no other test process for at least an hour.
pub fn free_port() -> u16 {
    let (current, previous) = period_dirs();
    let _ = fs::create_dir_all(&current);
    for _ in 0..1_000 {
        let port = candidate();
        if previous.join(port.to_string()).exists() {
            continue;
        }
        let reserved = OpenOptions::new().write(true).create_new(true).open(current.join(port.to_string())).is_ok();
        if reserved && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    // Every try taken (or no temp dir): fall back to the kernel's choice.
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}
