//! Store calls off the async runtime's threads. redb reads and writes
//! block; the request layer, the controllers and the Kubernetes API all make
//! them, so the helper lives in none of those (each would import the other).

use crate::error::RequestError;

/// Runs a blocking store call on tokio's blocking pool; a call that panics
/// becomes an internal error rather than taking the caller down.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RequestError> + Send + 'static,
) -> Result<T, RequestError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| RequestError::internal(format!("store task failed: {e}")))?
}

/// Input size under which [`blocking_if_large`] runs its work on the
/// calling task: admitting one small object (parsing it, a few reads of
/// redb's cached pages) takes tens of microseconds, less than the round trip
/// to a blocking thread and back, which wakes two threads on every write.
pub const INLINE_BYTES: usize = 16 * 1024;

/// Runs `f`, whose input is `bytes` long, on the calling task if that is
/// under [`INLINE_BYTES`] and on the blocking pool otherwise; a panic
/// becomes an internal error either way.
pub async fn blocking_if_large<T: Send + 'static>(
    bytes: usize,
    f: impl FnOnce() -> Result<T, RequestError> + Send + 'static,
) -> Result<T, RequestError> {
    if bytes >= INLINE_BYTES {
        return blocking(f).await;
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| RequestError::internal("store call panicked".to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_and_large_work_both_answer_and_a_panic_is_an_internal_error() {
        for bytes in [0, INLINE_BYTES - 1, INLINE_BYTES, 10 * INLINE_BYTES] {
            assert_eq!(blocking_if_large(bytes, move || Ok(bytes)).await.ok(), Some(bytes));
            let panicked =
                blocking_if_large(bytes, || -> Result<(), RequestError> { panic!("store call failed") }).await;
            assert!(panicked.is_err(), "{bytes} bytes");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn small_work_runs_on_the_calling_thread_and_large_work_elsewhere() {
        let caller = std::thread::current().id();
        let small = blocking_if_large(10, move || Ok(std::thread::current().id())).await.ok();
        assert_eq!(small, Some(caller));
        let large = blocking_if_large(INLINE_BYTES, move || Ok(std::thread::current().id())).await.ok();
        assert!(large.is_some_and(|id| id != caller));
    }
}
