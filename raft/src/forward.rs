//! Running a request on the leader from any node: when to retry, when to
//! give up and what to report. Kept apart from Raft and the network (behind
//! [`Route`]) so these rules are tested on their own, in paused time.

use std::future::Future;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::time::Instant;

use crate::consensus::Routed;
use crate::error::Error;
use crate::network::PeerMethod;

/// How long a write or membership change may look for a leader and commit.
pub(crate) const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// Pause between attempts while no leader is known.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// What forwarding needs from a node: who it is, whom it takes for the
/// leader, a call to that leader, and word when another node leads.
pub(crate) trait Route {
    /// This node's id.
    fn id(&self) -> u64;
    /// The leader this node knows of, with its address.
    fn leader(&self) -> Option<(u64, String)>;
    /// Calls `method` on the leader; the outer error is the transport's.
    fn call<Req, T>(
        &self,
        leader: u64,
        addr: &str,
        method: PeerMethod,
        request: &Req,
        timeout: Duration,
    ) -> impl Future<Output = Result<Result<T, Routed>, tonic::Status>> + Send
    where
        Req: Serialize + Sync,
        T: DeserializeOwned + Send;
    /// Resolves with the new leader once a node other than `leader` leads
    /// (never, if none does).
    fn leadership_leaves(&self, leader: u64) -> impl Future<Output = u64> + Send;
}

/// What one attempt came to.
enum Attempt<T> {
    Done(Result<T, Error>),
    /// Worth another try after a pause; why this one failed.
    Retry(String),
    /// Worth another try at once (the leader is known to have changed).
    RetryNow(String),
}

/// Runs `local` on the leader: directly if `node` leads, otherwise through
/// the peer `method`. Retries while there is no leader, the leader cannot
/// be reached or it moved, until [`WRITE_DEADLINE`]; a request that reached
/// a leader which then lost its leadership is not sent again unless it is
/// read-only (its outcome is unknown).
pub(crate) async fn on_leader<N, Req, T, F, Fut>(
    node: &N,
    method: PeerMethod,
    request: &Req,
    local: F,
) -> Result<T, Error>
where
    N: Route,
    Req: Serialize + Sync,
    T: DeserializeOwned + Send,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, Routed>>,
{
    let deadline = Instant::now() + WRITE_DEADLINE;
    let mut last_problem = String::from("no leader elected yet");
    loop {
        let attempt = match node.leader() {
            Some((leader, _)) if leader == node.id() => local_attempt(local().await),
            Some((leader, addr)) => {
                let remaining = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
                let call = node.call(leader, &addr, method, request, remaining);
                // A leader that is partitioned away or paused holds the call
                // until its deadline; once another node leads, waiting on it
                // only blocks this node's writes.
                tokio::select! {
                    reply = call => remote_attempt(leader, &addr, reply),
                    successor = node.leadership_leaves(leader) => moved(method, leader, successor),
                }
            }
            None => Attempt::Retry(last_problem),
        };
        match attempt {
            Attempt::Done(result) => return result,
            Attempt::Retry(problem) => last_problem = problem,
            Attempt::RetryNow(problem) => {
                last_problem = problem;
                continue;
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::NoLeader(last_problem));
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// This node led when the attempt started.
fn local_attempt<T>(result: Result<T, Routed>) -> Attempt<T> {
    match result {
        Ok(v) => Attempt::Done(Ok(v)),
        Err(Routed::NotLeader) => Attempt::Retry("leadership moved".into()),
        Err(Routed::Failed(e)) => Attempt::Done(Err(Error::Raft(e))),
    }
}

/// The leader (or the transport) answered.
fn remote_attempt<T>(leader: u64, addr: &str, reply: Result<Result<T, Routed>, tonic::Status>) -> Attempt<T> {
    match reply {
        Ok(Ok(v)) => Attempt::Done(Ok(v)),
        Ok(Err(Routed::NotLeader)) => Attempt::Retry(format!("node {leader} is no longer the leader")),
        Ok(Err(Routed::Failed(e))) => Attempt::Done(Err(Error::Raft(e))),
        // Not connected: the request never reached the leader; safe to retry.
        Err(s) if s.code() == tonic::Code::Unavailable => {
            Attempt::Retry(format!("leader {leader} at {addr} unreachable: {}", s.message()))
        }
        Err(s) => Attempt::Done(Err(Error::Unreachable { peer: leader, detail: s.message().to_string() })),
    }
}

/// Another node leads while `leader` holds the request: a read is asked
/// again, a write's outcome is unknown.
fn moved<T>(method: PeerMethod, leader: u64, successor: u64) -> Attempt<T> {
    if method.is_read_only() {
        return Attempt::RetryNow(format!("leadership moved from node {leader} to node {successor}"));
    }
    Attempt::Done(Err(Error::Unreachable {
        peer: leader,
        detail: format!(
            "leadership moved to node {successor} while node {leader} had the request: its outcome is unknown"
        ),
    }))
}

#[cfg(test)]
mod tests;
