//! Polling with a deadline, instead of sleeping and hoping.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `probe` every 50 ms until it returns `Some`, or panics after
/// `timeout` naming `what` and the last observation.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    let mut last;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(e) => last = e,
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last observation: {last}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
