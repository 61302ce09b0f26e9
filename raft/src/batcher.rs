//! Group commit: writes queued on a node go to the leader together, as one
//! Raft entry (one log append, one fsync on each node) instead of one each.
//! Every command in the batch still succeeds or fails on its own and gets its
//! own answer. While one batch commits, the next one fills up, so the busier
//! the hub, the larger the batches — and the cost of an fsync is shared.

use std::sync::{Arc, Weak};

use fleet_statemachine::{EncodedCommand, Proposal, Response};
use tokio::sync::{mpsc, oneshot};

use crate::consensus::Consensus;
use crate::error::Error;
use crate::network::PeerMethod;

/// Most commands in one entry.
const MAX_COMMANDS: usize = 256;
/// Most bytes of encoded commands in one entry; well under the peer message limit.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Writes waiting for a batch, per node.
pub const QUEUE: usize = 8192;

/// A write waiting for its batch, and where its answer goes.
pub struct Pending {
    /// Encoded by the submitter, so the batch is sized exactly and assembled
    /// without encoding again.
    pub command: EncodedCommand,
    pub reply: oneshot::Sender<Result<Response, Error>>,
}

/// Takes what is queued (after `first`) up to the batch limits.
fn fill(first: Pending, rx: &mut mpsc::Receiver<Pending>) -> Vec<Pending> {
    let mut bytes = first.command.len();
    let mut batch = vec![first];
    while batch.len() < MAX_COMMANDS && bytes < MAX_BYTES {
        match rx.try_recv() {
            Ok(p) => {
                bytes += p.command.len();
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

/// Proposes queued writes in batches, one batch at a time, until the node stops.
pub async fn run(consensus: Weak<Consensus>, mut rx: mpsc::Receiver<Pending>) {
    while let Some(first) = rx.recv().await {
        let batch = fill(first, &mut rx);
        let Some(consensus) = consensus.upgrade() else { return };
        propose(&consensus, batch).await;
    }
}

async fn propose(consensus: &Arc<Consensus>, batch: Vec<Pending>) {
    let (commands, replies): (Vec<EncodedCommand>, Vec<_>) = batch.into_iter().map(|p| (p.command, p.reply)).unzip();
    let proposal = Proposal::from_encoded(commands);
    let result: Result<Vec<Response>, Error> =
        consensus.on_leader(PeerMethod::Forward, &proposal, || consensus.write_on_leader(proposal.clone())).await;
    match result {
        Ok(responses) if responses.len() == replies.len() => {
            for (reply, response) in replies.into_iter().zip(responses) {
                let _ = reply.send(Ok(response));
            }
        }
        Ok(responses) => {
            let e = Error::Raft(format!("{} answers for {} commands", responses.len(), replies.len()));
            for reply in replies {
                let _ = reply.send(Err(duplicate(&e)));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(duplicate(&e)));
            }
        }
    }
}
