//! The signal every long-running Fleet program stops on. Here because the
//! node, the agent, the benchmark and the test harness's programs all
//! depend on this crate and would otherwise each carry a copy.

use std::future::Future;

/// Resolves on SIGTERM or Ctrl-C. The SIGTERM handler is installed when
/// this is called (not when first polled), so a signal that arrives while
/// the program is still starting is not lost to the default "terminate"
/// action. Where no SIGTERM handler can be installed, Ctrl-C alone.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(unix)]
        if let Some(mut term) = term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
