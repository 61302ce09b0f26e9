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

use std::future::Future;
use std::sync::{Arc, Weak};

use fleet_statemachine::{EncodedCommand, Part, Proposal, Response, Stage, WriteStages};
use tokio::sync::{mpsc, oneshot};

use crate::consensus::{Consensus, Routed};
use crate::error::Error;
use crate::network::PeerMethod;

/// What the batcher needs from consensus: whether this node leads, a commit
/// here as the leader, and a commit through whichever node leads. A trait
/// so group commit and its rerouting are tested without Raft or a network.
pub(crate) trait Propose: Send + Sync + 'static {
    /// Whether this node believes it leads.
    fn leads(&self) -> bool;
    /// Commits `proposal` here, as the leader ([`Consensus::write_on_leader`]).
    fn write_on_leader(&self, proposal: Proposal) -> impl Future<Output = Result<Vec<Response>, Routed>> + Send;
    /// Commits `proposal` here if this node leads, otherwise forwards it to
    /// the leader, retrying while leadership moves.
    fn write_anywhere(&self, proposal: Proposal) -> impl Future<Output = Result<Vec<Response>, Error>> + Send;
    /// Where time spent queued is recorded, if anywhere.
    fn stages(&self) -> Option<&WriteStages> {
        None
    }
}

impl Propose for Consensus {
    fn leads(&self) -> bool {
        Consensus::leads(self)
    }

    fn write_on_leader(&self, proposal: Proposal) -> impl Future<Output = Result<Vec<Response>, Routed>> + Send {
        Consensus::write_on_leader(self, proposal)
    }

    async fn write_anywhere(&self, proposal: Proposal) -> Result<Vec<Response>, Error> {
        self.on_leader(PeerMethod::Forward, &proposal, || self.write_on_leader(proposal.clone())).await
    }

    fn stages(&self) -> Option<&WriteStages> {
        Some(&self.store().metrics().stages)
    }
}

/// Most commands in one entry.
const MAX_COMMANDS: usize = 1024;
/// Most bytes of encoded commands in one entry (a single item larger than
/// this, up to the request limits, goes alone); well under the peer message
/// limit, and small enough that the AppendEntries budget (which halves while
/// calls to a peer miss openraft's heartbeat-long time-to-live) can cut a
/// storm of writes into messages a busy follower answers in time: an entry
/// itself cannot be cut.
const MAX_BYTES: usize = 1024 * 1024;
/// Writes waiting for a batch, per node.
pub const QUEUE: usize = 8192;

/// A write waiting for its batch: its commands, encoded by the submitter
/// (so the batch is sized exactly and assembled without encoding again),
/// and where its answers go.
pub struct Pending {
    part: Part,
    reply: Reply,
    /// When it was queued.
    queued: std::time::Instant,
}

impl Pending {
    /// One client's command.
    pub fn one(command: EncodedCommand, reply: oneshot::Sender<Result<Response, Error>>) -> Pending {
        Pending { part: Part::Command(command), reply: Reply::One(reply), queued: std::time::Instant::now() }
    }

    /// A follower's batch, forwarded to this node as the leader: merged with
    /// the leader's own writes into one entry (fewer, larger entries cost
    /// less per write), answered as a whole, in order. It is proposed only
    /// here: if this node no longer leads, it goes back to its follower as
    /// `NotLeader`, and the follower finds the new leader itself.
    pub fn forwarded(proposal: Proposal, reply: oneshot::Sender<Result<Vec<Response>, Routed>>) -> Pending {
        let count = proposal.len();
        let queued = std::time::Instant::now();
        Pending { part: Part::Batch(proposal), reply: Reply::Forwarded(count, reply), queued }
    }

    /// Sends a forwarded batch back to its follower to retry on the new leader.
    fn back_to_follower(self) -> Option<Pending> {
        match self.reply {
            Reply::Forwarded(_, tx) => {
                let _ = tx.send(Err(Routed::NotLeader));
                None
            }
            Reply::One(_) => Some(self),
        }
    }
}

/// Takes what is queued, starting with `first`, up to the batch limits. An
/// item that would cross them is held back as the start of the next batch.
fn fill(first: Pending, rx: &mut mpsc::Receiver<Pending>) -> (Vec<Pending>, Option<Pending>) {
    let (mut commands, mut bytes) = (first.part.commands(), first.part.encoded_len());
    let mut batch = vec![first];
    loop {
        let Ok(next) = rx.try_recv() else { return (batch, None) };
        let (more_commands, more_bytes) = (next.part.commands(), next.part.encoded_len());
        if commands + more_commands > MAX_COMMANDS || bytes + more_bytes > MAX_BYTES {
            return (batch, Some(next));
        }
        commands += more_commands;
        bytes += more_bytes;
        batch.push(next);
    }
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
pub(crate) async fn run<C: Propose>(consensus: Weak<C>, mut rx: mpsc::Receiver<Pending>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(LEADER_IN_FLIGHT as usize));
    let mut carried = None;
    loop {
        let first = match carried.take() {
            Some(p) => p,
            None => match rx.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        let Some(consensus) = consensus.upgrade() else { return };
        let wanted = if consensus.leads() { 1 } else { LEADER_IN_FLIGHT };
        let Ok(slot) = slots.clone().acquire_many_owned(wanted).await else { return };
        let (batch, next) = fill(first, &mut rx);
        carried = next;
        if let Some(stages) = consensus.stages() {
            batch.iter().for_each(|p| stages.since(Stage::queue, p.queued));
        }
        tokio::spawn(async move {
            propose(&consensus, batch).await;
            drop(slot);
        });
    }
}

/// Where the answers of one queued item go (a forwarded batch's: how many).
enum Reply {
    One(oneshot::Sender<Result<Response, Error>>),
    Forwarded(usize, oneshot::Sender<Result<Vec<Response>, Routed>>),
}

/// One entry of the batch's commands, and where their answers go, in order.
fn assemble(batch: Vec<Pending>) -> (Proposal, Vec<Reply>) {
    let (parts, replies) = batch.into_iter().map(|p| (p.part, p.reply)).unzip();
    (Proposal::concat(parts), replies)
}

async fn propose<C: Propose>(consensus: &Arc<C>, mut batch: Vec<Pending>) {
    if !consensus.leads() {
        batch = batch.into_iter().filter_map(Pending::back_to_follower).collect();
    }
    if batch.is_empty() {
        return;
    }
    let has_forwarded = batch.iter().any(|p| matches!(p.reply, Reply::Forwarded(..)));
    let (proposal, replies) = assemble(batch);
    if !has_forwarded {
        return propose_anywhere(consensus, proposal, replies).await;
    }
    // Only ever proposed here (see `Pending::forwarded`).
    let expected = proposal.len();
    match consensus.write_on_leader(proposal.clone()).await {
        Ok(responses) => settle(replies, expected, Ok(responses)),
        Err(Routed::NotLeader) => reroute(consensus, &proposal, replies).await,
        Err(Routed::Failed(e)) => settle(replies, expected, Err(Error::Raft(e))),
    }
}

/// Proposes on whichever node leads (here, or forwarded), then answers.
async fn propose_anywhere<C: Propose>(consensus: &Arc<C>, proposal: Proposal, replies: Vec<Reply>) {
    let expected = proposal.len();
    let result = consensus.write_anywhere(proposal).await;
    settle(replies, expected, result);
}

/// Answers every writer of a batch of `expected` commands from its result.
fn settle(replies: Vec<Reply>, expected: usize, result: Result<Vec<Response>, Error>) {
    match result {
        Ok(responses) if responses.len() == expected => answer(replies, responses),
        Ok(responses) => fail(replies, &Error::Raft(format!("{} answers for {expected} commands", responses.len()))),
        Err(e) => fail(replies, &e),
    }
}

/// Leadership moved before a merged batch was appended: forwarded batches go
/// back to their followers, and this node's own writes (encoded again: a
/// rare path) go to the new leader.
async fn reroute<C: Propose>(consensus: &Arc<C>, proposal: &Proposal, replies: Vec<Reply>) {
    let (own, own_replies) = own_writes(proposal, replies);
    if !own.is_empty() {
        propose_anywhere(consensus, Proposal::concat(own), own_replies).await;
    }
}

/// Splits a merged batch that was not appended: each forwarded batch is
/// sent back to its follower at once, and this node's own commands are
/// returned (encoded again) with their writers, in order.
fn own_writes(proposal: &Proposal, replies: Vec<Reply>) -> (Vec<Part>, Vec<Reply>) {
    let mut own = Vec::new();
    let mut own_replies = Vec::new();
    let mut at = 0;
    for reply in replies {
        match reply {
            Reply::One(tx) => {
                let command = proposal.commands().map_err(|e| e.to_string()).and_then(|commands| {
                    commands.get(at).cloned().ok_or_else(|| format!("the batch has no command {at}"))
                });
                match command.and_then(|c| EncodedCommand::new(c).map_err(|e| e.to_string())) {
                    Ok(encoded) => {
                        own.push(Part::Command(encoded));
                        own_replies.push(Reply::One(tx));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(Error::Codec(e)));
                    }
                }
                at += 1;
            }
            Reply::Forwarded(n, tx) => {
                let _ = tx.send(Err(Routed::NotLeader));
                at += n;
            }
        }
    }
    (own, own_replies)
}

/// Hands each writer its answers, in order.
fn answer(replies: Vec<Reply>, responses: Vec<Response>) {
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

/// Fails every writer of a batch with `e` (a forwarded batch as a whole).
fn fail(replies: Vec<Reply>, e: &Error) {
    for reply in replies {
        match reply {
            Reply::One(tx) => {
                let _ = tx.send(Err(duplicate(e)));
            }
            Reply::Forwarded(_, tx) => {
                let _ = tx.send(Err(Routed::Failed(e.to_string())));
            }
        }
    }
}

#[cfg(test)]
mod tests;
