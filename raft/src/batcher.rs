//! Group commit: writes queued on a node go to the leader together, as one
//! Raft entry (one log append, one fsync on each node) instead of one each.
//! Every command in the batch still succeeds or fails on its own and gets its
//! own answer. While one batch commits, the next one fills up, so the busier
//! the hub, the larger the batches — and the cost of an fsync is shared.
//!
//! A follower forwards its batch to the leader, whose own batcher merges it
//! with everything else queued there (its clients' writes, other followers'
//! batches) into one entry: every entry costs about 2 ms of CPU across the
//! trio whatever it holds, so fewer, larger entries leave more for writes.
//! The leader keeps two batches in flight, so one is fsync'd there while the
//! one before is on its way through the followers; a follower keeps one.

use std::sync::{Arc, Weak};

use fleet_statemachine::{EncodedCommand, Part, Proposal, Response};
use tokio::sync::{mpsc, oneshot};

use crate::consensus::Consensus;
use crate::error::Error;
use crate::network::PeerMethod;

/// Most commands in one entry (a batch may pass it by one forwarded batch).
const MAX_COMMANDS: usize = 1024;
/// Most bytes of encoded commands in one entry (likewise); well under the
/// peer message limit.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Writes waiting for a batch, per node.
pub const QUEUE: usize = 8192;

/// A write waiting for its batch, and where its answer goes.
pub enum Pending {
    /// One client's command, encoded by the submitter, so the batch is sized
    /// exactly and assembled without encoding again.
    One { command: EncodedCommand, reply: oneshot::Sender<Result<Response, Error>> },
    /// A follower's batch, forwarded to this node as the leader: merged with
    /// the leader's own writes into one entry (fewer, larger entries cost
    /// less per write), answered as a whole, in order.
    Forwarded { proposal: Proposal, reply: oneshot::Sender<Result<Vec<Response>, Error>> },
}

impl Pending {
    fn commands(&self) -> usize {
        match self {
            Pending::One { .. } => 1,
            Pending::Forwarded { proposal, .. } => proposal.commands().len(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Pending::One { command, .. } => command.len(),
            Pending::Forwarded { proposal, .. } => proposal.encoded_len(),
        }
    }
}

/// Takes what is queued (after `first`) up to the batch limits.
fn fill(first: Pending, rx: &mut mpsc::Receiver<Pending>) -> Vec<Pending> {
    let (mut commands, mut bytes) = (first.commands(), first.bytes());
    let mut batch = vec![first];
    while commands < MAX_COMMANDS && bytes < MAX_BYTES {
        match rx.try_recv() {
            Ok(p) => {
                commands += p.commands();
                bytes += p.bytes();
                batch.push(p);
            }
            Err(_) => break,
        }
    }
    batch
}

/// A copy of an error for every writer of a failed batch.
fn duplicate(e: &Error) -> Error {
    match e {
        Error::NoLeader(m) => Error::NoLeader(m.clone()),
        Error::Unreachable { peer, detail } => Error::Unreachable { peer: *peer, detail: detail.clone() },
        Error::ShuttingDown => Error::ShuttingDown,
        other => Error::Raft(other.to_string()),
    }
}

/// Batches the leader proposes at once: while one is being fsync'd there,
/// the one before is on its way through the followers.
const LEADER_IN_FLIGHT: u32 = 2;

/// Proposes queued writes in batches until the node stops: on the leader up
/// to [`LEADER_IN_FLIGHT`] at a time, elsewhere one at a time (a follower's
/// batch is merged into the leader's, so one in flight keeps it large).
pub async fn run(consensus: Weak<Consensus>, mut rx: mpsc::Receiver<Pending>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(LEADER_IN_FLIGHT as usize));
    while let Some(first) = rx.recv().await {
        let Some(node) = consensus.upgrade() else { return };
        let leads = node.leader().is_some_and(|(leader, _)| leader == node.id());
        drop(node);
        let wanted = if leads { 1 } else { LEADER_IN_FLIGHT };
        let Ok(slot) = slots.clone().acquire_many_owned(wanted).await else { return };
        let batch = fill(first, &mut rx);
        let Some(consensus) = consensus.upgrade() else { return };
        tokio::spawn(async move {
            propose(&consensus, batch).await;
            drop(slot);
        });
    }
}

/// Where the answers of one queued item go.
enum Reply {
    One(oneshot::Sender<Result<Response, Error>>),
    Forwarded(usize, oneshot::Sender<Result<Vec<Response>, Error>>),
}

async fn propose(consensus: &Arc<Consensus>, batch: Vec<Pending>) {
    let mut parts = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for pending in batch {
        match pending {
            Pending::One { command, reply } => {
                parts.push(Part::Command(command));
                replies.push(Reply::One(reply));
            }
            Pending::Forwarded { proposal, reply } => {
                replies.push(Reply::Forwarded(proposal.commands().len(), reply));
                parts.push(Part::Batch(proposal));
            }
        }
    }
    let proposal = Proposal::concat(parts);
    let expected = proposal.commands().len();
    let result: Result<Vec<Response>, Error> =
        consensus.on_leader(PeerMethod::Forward, &proposal, || consensus.write_on_leader(proposal.clone())).await;
    match result {
        Ok(responses) if responses.len() == expected => {
            let mut responses = responses.into_iter();
            for reply in replies {
                match reply {
                    Reply::One(tx) => {
                        let answer = responses.next().ok_or_else(|| Error::Raft("an answer is missing".into()));
                        let _ = tx.send(answer);
                    }
                    Reply::Forwarded(n, tx) => {
                        let _ = tx.send(Ok(responses.by_ref().take(n).collect()));
                    }
                }
            }
        }
        Ok(responses) => {
            let e = Error::Raft(format!("{} answers for {expected} commands", responses.len()));
            fail(replies, &e);
        }
        Err(e) => fail(replies, &e),
    }
}

fn fail(replies: Vec<Reply>, e: &Error) {
    for reply in replies {
        match reply {
            Reply::One(tx) => {
                let _ = tx.send(Err(duplicate(e)));
            }
            Reply::Forwarded(_, tx) => {
                let _ = tx.send(Err(duplicate(e)));
            }
        }
    }
}
