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

/// Polls `probe` until what it reads equals `want` (see [`eventually`]).
pub async fn eventually_equals<T, F, Fut>(what: &str, timeout: Duration, want: &T, mut probe: F)
where
    T: PartialEq + std::fmt::Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    eventually(what, timeout, || {
        let read = probe();
        async move {
            match read.await? {
                got if got == *want => Ok(()),
                got => Err(format!("{got:?}")),
            }
        }
    })
    .await
}
