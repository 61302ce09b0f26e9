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
