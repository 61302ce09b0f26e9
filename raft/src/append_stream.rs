//! The leader's AppendEntries to one follower on one long-lived gRPC
//! stream instead of a unary call each.
//!
//! Every write costs each follower two AppendEntries (the entries, then the
//! commit index). As unary calls each one opened an HTTP/2 stream, sent and
//! parsed two header blocks and a trailer, and spawned a task on both sides;
//! on a stream it is one data frame each way.
//!
//! openraft gives every AppendEntries a time-to-live and drops the call when
//! it passes. The next call then opens a new stream instead of queueing
//! behind the request it gave up on: on a busy follower a backlog of
//! abandoned requests, each handled in full, would keep every later one late
//! too, and the leader would never hear from that follower in time again.
//! Requests and replies carry a sequence number, so that a reply can never
//! be taken for another's.
//!
//! A follower handles the messages of a stream one at a time, each to the
//! end even if the leader stops waiting (see `peer_service.rs` for why), and
//! ends the stream when its node stops, so that shutdown does not wait for
//! the leader to hang up.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use fleet_proto::peer::Sequenced;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// Messages that may wait on either side of a stream. The leader sends one
/// AppendEntries to a follower at a time and waits for its reply.
const STREAM_DEPTH: usize = 4;

/// How long a leader keeps using unary calls with a follower that does not
/// know the stream (a node of an earlier version) before trying it again.
const RETRY_UNSUPPORTED: Duration = Duration::from_secs(60);

/// The replies of one open stream.
pub(crate) type Replies = Pin<Box<dyn Stream<Item = Result<Sequenced, Status>> + Send + Sync>>;

/// The leader's side of the stream to one follower: opened on first use and
/// again after any failure.
#[derive(Default)]
pub(crate) struct AppendStream {
    open: Option<(mpsc::Sender<Sequenced>, Replies)>,
    next_seq: u64,
    /// A request was sent and its caller has not had the reply: if the next
    /// call finds this set, that caller gave up on it.
    awaiting: bool,
    /// The follower refused the stream as unknown: until then, unary calls.
    unsupported_until: Option<Instant>,
}

impl AppendStream {
    /// Whether to use the stream (the follower has not refused it lately).
    pub(crate) fn usable(&self, now: Instant) -> bool {
        self.unsupported_until.is_none_or(|until| now >= until)
    }

    /// Sends one request and returns its reply, opening the stream with
    /// `open` (given the requests to send) if none is open. Any failure, no
    /// reply within `timeout`, or a caller that gave up before its reply
    /// closes the stream: the next request opens a new one. A follower that
    /// does not know the stream makes [`AppendStream::usable`] false for a
    /// while.
    pub(crate) async fn exchange<F, Fut>(
        &mut self,
        data: Vec<u8>,
        timeout: Duration,
        open: F,
    ) -> Result<Vec<u8>, Status>
    where
        F: FnOnce(ReceiverStream<Sequenced>) -> Fut,
        Fut: Future<Output = Result<Replies, Status>>,
    {
        if self.awaiting {
            self.open = None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.awaiting = true;
        let answer = match tokio::time::timeout(timeout, self.send_and_wait(seq, data, open)).await {
            Ok(answer) => answer,
            // Cancelled, as a unary call's own deadline reports it: a late
            // reply is not an unreachable peer (openraft would stop sending
            // to it for a while, heartbeats too, and it would call an
            // election).
            Err(_) => Err(Status::cancelled(format!("no reply on the append stream within {timeout:?}"))),
        };
        self.awaiting = false;
        if let Err(status) = &answer {
            self.open = None;
            if status.code() == tonic::Code::Unimplemented {
                self.unsupported_until = Some(Instant::now() + RETRY_UNSUPPORTED);
            }
        }
        answer
    }

    async fn send_and_wait<F, Fut>(&mut self, seq: u64, data: Vec<u8>, open: F) -> Result<Vec<u8>, Status>
    where
        F: FnOnce(ReceiverStream<Sequenced>) -> Fut,
        Fut: Future<Output = Result<Replies, Status>>,
    {
        let (requests, replies) = match &mut self.open {
            Some(open) => open,
            None => {
                let (requests, outgoing) = mpsc::channel(STREAM_DEPTH);
                let replies = open(ReceiverStream::new(outgoing)).await?;
                self.open.insert((requests, replies))
            }
        };
        requests
            .send(Sequenced { seq, data })
            .await
            .map_err(|_| Status::unavailable("the append stream to the follower has closed"))?;
        match replies.next().await {
            Some(Ok(reply)) if reply.seq == seq => Ok(reply.data),
            Some(Ok(reply)) => Err(Status::internal(format!(
                "the follower answered request {} on the append stream while request {seq} waited",
                reply.seq
            ))),
            Some(Err(status)) => Err(status),
            None => Err(Status::unavailable("the follower ended the append stream")),
        }
    }
}

/// The follower's side: handles each request of `inbound` with `handle`,
/// one at a time and each to the end, and returns the replies. A failed
/// request ends the stream with its error; `stop` resolving ends it with
/// "unavailable" between two requests.
pub(crate) fn serve<S, H, Fut>(
    mut inbound: S,
    stop: impl Future<Output = ()> + Send + 'static,
    mut handle: H,
) -> ReceiverStream<Result<Sequenced, Status>>
where
    S: Stream<Item = Result<Sequenced, Status>> + Send + Unpin + 'static,
    H: FnMut(Vec<u8>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Vec<u8>, Status>> + Send,
{
    let (replies, outgoing) = mpsc::channel(STREAM_DEPTH);
    tokio::spawn(async move {
        let mut stop = std::pin::pin!(stop);
        loop {
            let next = tokio::select! {
                biased;
                () = &mut stop => {
                    let _ = replies.send(Err(Status::unavailable("this node is stopping"))).await;
                    return;
                }
                next = inbound.next() => next,
            };
            // The leader hung up (or its stream broke): nothing to answer.
            let Some(Ok(request)) = next else { return };
            let reply = handle(request.data).await.map(|data| Sequenced { seq: request.seq, data });
            let failed = reply.is_err();
            if replies.send(reply).await.is_err() || failed {
                return;
            }
        }
    });
    ReceiverStream::new(outgoing)
}

#[cfg(test)]
mod tests;
