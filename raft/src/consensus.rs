//! The node's handle on consensus: start Raft over the redb stores, and
//! write, read linearizably and change membership from any node — a
//! follower routes each of these to the leader over the peer channel.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fleet_statemachine::{Command, EncodedCommand, OpOutcome, Proposal, Response, Stage, StateMachine, Store};
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{BasicNode, ChangeMembers, Config, ServerState, SnapshotPolicy};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::forward::WRITE_DEADLINE;
use crate::log_store::LogStore;
use crate::network::{PeerMethod, PeerNetwork, PeerTls};
use crate::Raft;

/// The Raft log's directory in a node's data dir.
pub const LOG_DIR: &str = "raft-wal";
/// The state machine's directory in a node's data dir.
pub(crate) const STATE_DIR: &str = "state";

/// Raft timing and log-compaction knobs.
#[derive(Debug, Clone)]
pub struct RaftTuning {
    pub heartbeat_ms: u64,
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    /// Build a snapshot after this many entries since the last one.
    pub snapshot_logs: u64,
    /// Entries kept behind a snapshot for slightly lagging followers.
    pub keep_logs: u64,
}

impl Default for RaftTuning {
    fn default() -> Self {
        RaftTuning {
            heartbeat_ms: 100,
            election_min_ms: 300,
            election_max_ms: 600,
            snapshot_logs: 10_000,
            keep_logs: 1_000,
        }
    }
}

/// A membership change, as forwarded to the leader.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MembershipChange {
    /// Add a node as a learner, wait for it to catch up, then make it a voter.
    Add { id: u64, address: String },
    /// Remove a node (voter or learner).
    Remove { id: u64 },
}

/// Why the leader did not do what a follower forwarded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Routed {
    /// The receiver is not the leader (anymore); try again.
    NotLeader,
    /// It failed; do not retry.
    Failed(String),
}

/// What a node says about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeStatus {
    pub id: u64,
    /// `Leader`, `Follower`, `Learner` or `Candidate`.
    pub role: String,
    pub term: u64,
    pub last_applied: u64,
    pub leader: Option<u64>,
    /// The state digest (`sha256:<hex>`), when asked for; empty otherwise.
    #[serde(default)]
    pub digest: String,
    /// The applied index the digest covers.
    #[serde(default)]
    pub digest_index: u64,
    /// The node's software version (empty from nodes older than this field).
    #[serde(default)]
    pub version: String,
}

/// This build's version, as nodes report it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One member as seen by the node answering `cluster status`.
#[derive(Debug, Clone)]
pub struct MemberStatus {
    pub id: u64,
    pub address: String,
    pub role: String,
    pub last_applied: u64,
    pub reachable: bool,
    /// The member's state digest (`sha256:<hex>`), when asked for and known.
    pub digest: String,
    /// The applied index the digest covers.
    pub digest_index: u64,
    /// The member's software version; empty if unknown.
    pub version: String,
}

/// Consensus for one node.
pub struct Consensus {
    id: u64,
    raft: Raft,
    network: PeerNetwork,
    store: Arc<Store>,
    metrics: crate::metrics::RaftMetrics,
    /// Writes waiting to be proposed together (group commit).
    queue: tokio::sync::mpsc::Sender<crate::batcher::Pending>,
}

impl Consensus {
    /// Opens the stores in `data_dir` and starts Raft. Restarting on the same
    /// directory resumes where the node stopped. `dial` gives this node's own
    /// addresses for some peers (see [`PeerNetwork::new`]).
    pub async fn start(
        id: u64,
        data_dir: &Path,
        tls: PeerTls,
        dial: BTreeMap<u64, String>,
        tuning: &RaftTuning,
    ) -> Result<Arc<Consensus>, Error> {
        std::fs::create_dir_all(data_dir).map_err(|e| Error::Storage(format!("{}: {e}", data_dir.display())))?;
        let metrics = crate::metrics::RaftMetrics::default();
        let sm = StateMachine::open(&data_dir.join(STATE_DIR))?;
        let store = sm.store();
        let stages = store.metrics().stages.clone();
        let log = LogStore::open(&data_dir.join(LOG_DIR))?
            .with_fsync_histogram(metrics.log_fsync_seconds.clone())
            .with_stages(stages.clone())
            .with_node_id(id);
        let durable = log.durable();
        let config = Config {
            cluster_name: "fleet".into(),
            heartbeat_interval: tuning.heartbeat_ms,
            election_timeout_min: tuning.election_min_ms,
            election_timeout_max: tuning.election_max_ms,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(tuning.snapshot_logs),
            max_in_snapshot_log_to_keep: tuning.keep_logs,
            install_snapshot_timeout: 10_000,
            ..Default::default()
        }
        .validate()
        .map_err(|e| Error::Invalid(format!("raft configuration: {e}")))?;
        let network = PeerNetwork::new(tls, dial).with_stages(stages).with_durable_log(durable.clone());
        let sm = crate::gate::DurableApply::new(sm, durable);
        let raft =
            Raft::new(id, Arc::new(config), network.clone(), log, sm).await.map_err(|e| Error::Raft(e.to_string()))?;
        let (queue, pending) = tokio::sync::mpsc::channel(crate::batcher::QUEUE);
        let consensus = Arc::new(Consensus { id, raft, network, store, metrics, queue });
        tokio::spawn(crate::batcher::run(Arc::downgrade(&consensus), pending));
        tokio::spawn(log_leadership(id, consensus.raft.server_metrics()));
        Ok(consensus)
    }

    /// This node's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The Raft instance (metrics, peer RPC handling).
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// This node's object store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// What consensus measured on this node (proposals, commit and fsync latency).
    pub fn metrics(&self) -> &crate::metrics::RaftMetrics {
        &self.metrics
    }

    /// Initializes membership on a brand-new cluster; harmless when already
    /// initialized (on this node or, through another node, on the cluster).
    pub async fn initialize(&self, members: BTreeMap<u64, BasicNode>) -> Result<(), Error> {
        match self.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(()),
            Err(e) => Err(Error::Raft(e.to_string())),
        }
    }

    /// The leader this node knows of, with its address.
    pub fn leader(&self) -> Option<(u64, String)> {
        let metrics = self.raft.metrics().borrow().clone();
        let leader = metrics.current_leader?;
        let addr = metrics.membership_config.membership().get_node(&leader).map(|n| n.addr.clone())?;
        Some((leader, addr))
    }

    /// Runs `local` on the leader: directly if this node leads, otherwise
    /// through the peer `method`. Retries while there is no leader or it
    /// moved, until the deadline (the rules are in `forward.rs`).
    pub async fn on_leader<Req, T, F, Fut>(&self, method: PeerMethod, request: &Req, local: F) -> Result<T, Error>
    where
        Req: Serialize + Sync,
        T: Serialize + serde::de::DeserializeOwned + Send,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, Routed>>,
    {
        crate::forward::on_leader(self, method, request, local).await
    }

    /// Proposes a command and waits until it is applied here too (so a read
    /// on this node right after sees it). Returns the log index and outcomes,
    /// or the state machine's refusal.
    pub async fn write(&self, command: Command) -> Result<(u64, Vec<OpOutcome>), Error> {
        let command = EncodedCommand::new(command).map_err(|e| Error::Codec(e.to_string()))?;
        if command.encoded_len() > crate::MAX_COMMAND_BYTES {
            return Err(Error::TooLarge {
                what: describe(command.command()),
                bytes: command.encoded_len(),
                limit: crate::MAX_COMMAND_BYTES,
            });
        }
        let in_flight = crate::metrics::InFlight::start(&self.metrics);
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue.send(crate::batcher::Pending::one(command, reply)).await.map_err(|_| Error::ShuttingDown)?;
        let response: Response = answer.await.map_err(|_| Error::ShuttingDown)??;
        // Committed (and applied on the leader), whatever the state machine said.
        in_flight.committed();
        let (index, outcomes) = response.into_result()?;
        let answered = std::time::Instant::now();
        self.wait_applied(index, WRITE_DEADLINE).await?;
        self.store.metrics().stages.since(Stage::wait_applied, answered);
        Ok((index, outcomes))
    }

    /// Takes a batch a follower forwarded: queued with this node's own writes
    /// so they share one entry. A node that is not the leader says so at
    /// once, and the follower finds the leader again.
    pub async fn write_forwarded(&self, proposal: Proposal) -> Result<Vec<Response>, Routed> {
        if !self.leads() {
            return Err(Routed::NotLeader);
        }
        if proposal.encoded_len() > crate::MAX_COMMAND_BYTES {
            let what = "a forwarded proposal".to_string();
            let (bytes, limit) = (proposal.encoded_len(), crate::MAX_COMMAND_BYTES);
            return Err(Routed::Failed(Error::TooLarge { what, bytes, limit }.to_string()));
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let pending = crate::batcher::Pending::forwarded(proposal, reply);
        if self.queue.send(pending).await.is_err() {
            return Err(Routed::Failed(Error::ShuttingDown.to_string()));
        }
        answer.await.unwrap_or_else(|_| Err(Routed::Failed(Error::ShuttingDown.to_string())))
    }

    /// Whether this node believes it is the leader.
    pub fn leads(&self) -> bool {
        self.raft.metrics().borrow().current_leader == Some(self.id)
    }

    /// Commits a batch of commands on this node, which must be the leader.
    pub async fn write_on_leader(&self, proposal: Proposal) -> Result<Vec<Response>, Routed> {
        let started = std::time::Instant::now();
        let written = tokio::time::timeout(WRITE_DEADLINE, self.raft.client_write(proposal)).await;
        self.store.metrics().stages.since(Stage::commit, started);
        match written {
            Ok(Ok(reply)) => Ok(reply.data),
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_)))) => Err(Routed::NotLeader),
            Ok(Err(e)) => Err(Routed::Failed(e.to_string())),
            Err(_) => Err(Routed::Failed(
                "timed out waiting for the write to commit; it may or may not have been applied".into(),
            )),
        }
    }

    /// The index a linearizable read must wait for, confirmed by the leader
    /// with a quorum round, then awaited on this node.
    pub async fn linearizable_index(&self) -> Result<u64, Error> {
        let index: u64 = self.on_leader(PeerMethod::ReadIndex, &(), || self.read_index_on_leader()).await?;
        self.wait_applied(index, WRITE_DEADLINE).await?;
        Ok(index)
    }

    /// Confirms leadership with a quorum and returns the read index: at
    /// least the last entry of this leader's log, not only what it knows
    /// to be committed.
    ///
    /// openraft's read index is the larger of the commit index and the
    /// leader's first entry of its term. A leader that restarts with its
    /// vote (every node killed at once, then started again) is restored as
    /// leader without a new first entry, and with the commit index it last
    /// saved, which may be behind entries it had committed and
    /// acknowledged before the crash: reads at that index would miss
    /// acknowledged writes. Every acknowledged write is in the leader's
    /// log, so waiting for its last entry to apply (which happens only once
    /// it is committed) serves every read after them.
    pub async fn read_index_on_leader(&self) -> Result<u64, Routed> {
        match self.raft.get_read_log_id().await {
            Ok((read, _)) => {
                let last_log = self.raft.metrics().borrow().last_log_index;
                Ok(read_index(read.map(|l| l.index), last_log))
            }
            Err(RaftError::APIError(openraft::error::CheckIsLeaderError::ForwardToLeader(_))) => Err(Routed::NotLeader),
            Err(e) => Err(Routed::Failed(e.to_string())),
        }
    }

    /// Waits until this node has applied `index`.
    pub async fn wait_applied(&self, index: u64, timeout: Duration) -> Result<(), Error> {
        let mut rx = self.store.subscribe_applied();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|applied| *applied >= index)).await.map(|r| r.is_ok());
        match waited {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::ShuttingDown),
            Err(_) => Err(Error::NoLeader(format!(
                "this node has applied up to {} and did not reach {index} within {timeout:?}",
                self.store.applied_index()
            ))),
        }
    }

    /// Adds or removes a node, through the leader.
    pub async fn change_membership(&self, change: MembershipChange) -> Result<(), Error> {
        self.on_leader(PeerMethod::ChangeMembership, &change, || self.change_membership_on_leader(change.clone())).await
    }

    /// Applies a membership change on this node, which must be the leader.
    pub async fn change_membership_on_leader(&self, change: MembershipChange) -> Result<(), Routed> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.state != ServerState::Leader {
            return Err(Routed::NotLeader);
        }
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let plan = plan_membership(change, &voters, |id| membership.get_node(&id).is_some()).map_err(Routed::Failed)?;
        let map = |e: RaftError<u64, ClientWriteError<u64, BasicNode>>| match e {
            RaftError::APIError(ClientWriteError::ForwardToLeader(_)) => Routed::NotLeader,
            other => Routed::Failed(other.to_string()),
        };
        match plan {
            MembershipPlan::AddVoter { id, address, voters } => {
                // Blocking: returns once the learner has caught up with the log.
                self.raft.add_learner(id, BasicNode::new(address), true).await.map_err(map)?;
                self.raft.change_membership(voters, false).await.map_err(map)?;
            }
            MembershipPlan::Voters(voters) => {
                self.raft.change_membership(voters, false).await.map_err(map)?;
            }
            MembershipPlan::RemoveLearner(id) => {
                self.raft
                    .change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([id])), false)
                    .await
                    .map_err(map)?;
            }
        }
        Ok(())
    }

    /// This node's own role, term and applied index.
    pub fn local_status(&self) -> NodeStatus {
        let metrics = self.raft.metrics().borrow().clone();
        let role = match metrics.state {
            ServerState::Leader => "Leader",
            ServerState::Candidate => "Candidate",
            ServerState::Learner => "Learner",
            ServerState::Follower | ServerState::Shutdown => "Follower",
        };
        NodeStatus {
            id: self.id,
            role: role.to_string(),
            term: metrics.current_term,
            last_applied: metrics.last_applied.map(|l| l.index).unwrap_or(0),
            leader: metrics.current_leader,
            digest: String::new(),
            digest_index: 0,
            version: VERSION.to_string(),
        }
    }

    /// [`Consensus::local_status`], with the state digest if `digest` (read
    /// off the runtime threads; an unreadable store leaves it empty).
    pub async fn local_status_with(&self, digest: bool) -> NodeStatus {
        let mut status = self.local_status();
        if digest {
            let store = self.store.clone();
            match tokio::task::spawn_blocking(move || store.digest()).await {
                Ok(Ok(d)) => {
                    status.digest = d.sha256;
                    status.digest_index = d.index;
                }
                Ok(Err(e)) => tracing::warn!("state digest: {e}"),
                Err(e) => tracing::warn!("state digest task: {e}"),
            }
        }
        status
    }

    /// Every member (voters and learners), each asked for its own status
    /// concurrently; a member that does not answer within a second (five with
    /// `digest`) is
    /// reported unreachable with the role membership gives it. With
    /// `digest`, each member also reports its state digest.
    pub async fn cluster_status(&self, digest: bool) -> (Option<u64>, u64, Vec<MemberStatus>) {
        let metrics = self.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let nodes: Vec<(u64, String)> = membership.nodes().map(|(id, n)| (*id, n.addr.clone())).collect();
        let asks = nodes.into_iter().map(|(id, address)| {
            let is_voter = voters.contains(&id);
            async move {
                let status = if id == self.id {
                    Some(self.local_status_with(digest).await)
                } else {
                    // `None` (what an older caller sends) asks for no digest.
                    let ask = digest.then_some(true);
                    let wait = Duration::from_secs(if digest { 5 } else { 1 });
                    self.network.call::<_, NodeStatus>(id, &address, PeerMethod::NodeStatus, &ask, wait).await.ok()
                };
                match status {
                    Some(s) => MemberStatus {
                        id,
                        address,
                        role: s.role,
                        last_applied: s.last_applied,
                        reachable: true,
                        digest: s.digest,
                        digest_index: s.digest_index,
                        version: s.version,
                    },
                    None => MemberStatus {
                        id,
                        address,
                        role: if is_voter { "Follower" } else { "Learner" }.to_string(),
                        last_applied: 0,
                        reachable: false,
                        digest: String::new(),
                        digest_index: 0,
                        version: String::new(),
                    },
                }
            }
        });
        let members = futures::future::join_all(asks).await;
        (metrics.current_leader, metrics.current_term, members)
    }

    /// Stops Raft.
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!("raft shutdown: {e}");
        }
    }
}

impl crate::forward::Route for Consensus {
    fn id(&self) -> u64 {
        self.id
    }

    fn leader(&self) -> Option<(u64, String)> {
        Consensus::leader(self)
    }

    fn call<Req, T>(
        &self,
        leader: u64,
        addr: &str,
        method: PeerMethod,
        request: &Req,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<Result<T, Routed>, tonic::Status>> + Send
    where
        Req: Serialize + Sync,
        T: serde::de::DeserializeOwned + Send,
    {
        self.network.call(leader, addr, method, request, timeout)
    }

    async fn leadership_leaves(&self, leader: u64) -> u64 {
        let mut metrics = self.raft.server_metrics();
        let successor = metrics
            .wait_for(|m| m.current_leader.is_some_and(|l| l != leader))
            .await
            .ok()
            .and_then(|m| m.current_leader);
        match successor {
            Some(successor) => successor,
            None => std::future::pending().await,
        }
    }
}

/// What a membership change comes to on the leader, given the voters and
/// whether a node is a member at all (a learner, if not a voter); the
/// refusal says why, for the caller.
#[derive(Debug, PartialEq)]
enum MembershipPlan {
    /// Add `id` as a learner (waiting for it to catch up), then make
    /// `voters` (the current ones and `id`) the voters.
    AddVoter { id: u64, address: String, voters: BTreeSet<u64> },
    /// Make these the voters (a voter removed).
    Voters(BTreeSet<u64>),
    /// Drop a learner.
    RemoveLearner(u64),
}

fn plan_membership(
    change: MembershipChange,
    voters: &BTreeSet<u64>,
    is_member: impl Fn(u64) -> bool,
) -> Result<MembershipPlan, String> {
    match change {
        MembershipChange::Add { id, .. } if voters.contains(&id) => Err(format!("node {id} is already a voter")),
        MembershipChange::Add { id, address } => {
            let mut next = voters.clone();
            next.insert(id);
            Ok(MembershipPlan::AddVoter { id, address, voters: next })
        }
        MembershipChange::Remove { id } if voters.contains(&id) => {
            if voters.len() == 1 {
                return Err(format!("node {id} is the last voter and cannot be removed"));
            }
            let mut next = voters.clone();
            next.remove(&id);
            Ok(MembershipPlan::Voters(next))
        }
        MembershipChange::Remove { id } if is_member(id) => Ok(MembershipPlan::RemoveLearner(id)),
        MembershipChange::Remove { id } => Err(format!("node {id} is not a member")),
    }
}

/// The index a linearizable read waits for: openraft's read index, or the
/// leader's last log entry if that is later (see
/// [`Consensus::read_index_on_leader`] for why).
fn read_index(openraft_read: Option<u64>, last_log: Option<u64>) -> u64 {
    openraft_read.unwrap_or(0).max(last_log.unwrap_or(0))
}

/// Names what a command writes, for an error: its first object and how many
/// operations it holds.
fn describe(command: &fleet_statemachine::Command) -> String {
    use fleet_statemachine::Op;
    let first = command.ops.first().map(|op| match op {
        Op::Create { object } | Op::Apply { object, .. } | Op::Update { object } | Op::UpdateStatus { object } => {
            let key = fleet_api::ObjectKey::of(object);
            format!("{} {}/{}", object.kind, key.namespace, key.name)
        }
        Op::Delete { key, .. } | Op::Check { key, .. } | Op::CheckGeneration { key, .. } => {
            format!("{} {}/{}", key.kind, key.namespace, key.name)
        }
    });
    match (first, command.ops.len()) {
        (Some(first), 1) => format!("the write of {first}"),
        (Some(first), n) => format!("a write of {n} objects ({first} first)"),
        (None, _) => "an empty write".to_string(),
    }
}

/// Logs each change of the leader or of this node's role as this node sees
/// it (with the term), so a node's log tells when it lost and found a
/// leader; ends when Raft stops.
async fn log_leadership(
    id: u64,
    mut metrics: tokio::sync::watch::Receiver<openraft::metrics::RaftServerMetrics<u64, BasicNode>>,
) {
    let mut seen = None;
    loop {
        let (leader, state, term) = {
            let m = metrics.borrow_and_update();
            (m.current_leader, m.state, m.vote.leader_id().term)
        };
        if seen != Some((leader, state)) {
            match leader {
                Some(leader) => tracing::info!(id, term, leader, role = ?state, "leader known"),
                None => tracing::info!(id, term, role = ?state, "no leader known"),
            }
            seen = Some((leader, state));
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
