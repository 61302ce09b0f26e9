//! The store lock: an exclusive advisory lock on `STORE/agent.lock`, held
//! by whichever process may write the embedded target's files — the running
//! agent for its whole life, or an out-of-band edit when no agent runs. The
//! holder writes its process id into the file, for messages. The lock goes
//! with the process (closing the file releases it), so a crash never leaves
//! a stale lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::AgentError;

/// The lock file's name in the store directory.
pub const LOCK_FILE: &str = "agent.lock";
/// How often a waiting [`StoreLock::acquire`] tries again.
const RETRY: Duration = Duration::from_millis(50);

/// A held store lock; released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the lock of the store in `store_dir` (creating the directory
    /// and the file if needed) if no other process holds it; `None` if one does.
    pub fn try_acquire(store_dir: &Path) -> Result<Option<StoreLock>, AgentError> {
        std::fs::create_dir_all(store_dir).map_err(|e| AgentError::io(store_dir, e))?;
        let path = store_dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| AgentError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(AgentError::io(&path, e)),
        }
        let pid = format!("{}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()))
            .map_err(|e| AgentError::io(&path, e))?;
        Ok(Some(StoreLock { _file: file }))
    }

    /// Takes the lock, waiting up to `wait` for another holder (a quick
    /// out-of-band edit) to let go; an error naming the holder after that.
    pub async fn acquire(store_dir: &Path, wait: Duration) -> Result<StoreLock, AgentError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(lock) = StoreLock::try_acquire(store_dir)? {
                return Ok(lock);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(AgentError::Edit(format!(
                    "{} is held by {}: is another fleet-agent running on this data dir?",
                    lock_path(store_dir).display(),
                    holder(store_dir)
                )));
            }
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// The lock file of a store.
pub fn lock_path(store_dir: &Path) -> PathBuf {
    store_dir.join(LOCK_FILE)
}

/// `process N` as the lock file says, or `another process`.
pub fn holder(store_dir: &Path) -> String {
    let mut text = String::new();
    let read = File::open(lock_path(store_dir)).and_then(|mut f| f.read_to_string(&mut text));
    match read.ok().and_then(|_| text.trim().parse::<u32>().ok()) {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("embedded");
        let held = StoreLock::try_acquire(&store).unwrap().expect("free");
        assert!(StoreLock::try_acquire(&store).unwrap().is_none(), "held");
        assert_eq!(holder(&store), format!("process {}", std::process::id()));
        let e = StoreLock::acquire(&store, Duration::from_millis(120)).await.unwrap_err().to_string();
        assert!(e.contains("agent.lock") && e.contains("another fleet-agent"), "{e}");
        drop(held);
        StoreLock::acquire(&store, Duration::from_millis(120)).await.expect("released");
    }
}
