//! Outgoing peer traffic: one cached gRPC channel per peer over mTLS. The
//! server name we verify is `node-<id>.fleet`, so a peer is accepted only if
//! the CA issued it the certificate of the node id we meant to reach.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_proto::peer::raft_peer_client::RaftPeerClient;
use fleet_proto::peer::Payload;
use fleet_proto::tls::node_server_name;
use fleet_statemachine::TypeConfig;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, EntryPayload};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::append_stream::{AppendStream, Replies};
use crate::codec::{decode, encode};
use crate::error::Error;
use crate::MAX_MESSAGE_BYTES;

/// The fleet CA and this node's certificate, for dialing peers.
#[derive(Clone)]
pub struct PeerTls {
    pub ca_pem: Vec<u8>,
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

/// Channels to peers, shared by Raft replication and forwarding.
#[derive(Clone)]
pub struct PeerNetwork {
    tls: PeerTls,
    /// This node's own addresses for some peers, used instead of the
    /// addresses in the membership (which every node shares): lets a test
    /// put a proxy on each directed link, or a node reach a peer through
    /// NAT.
    dial: Arc<BTreeMap<u64, String>>,
    channels: Arc<Mutex<HashMap<u64, (String, Channel)>>>,
    /// Where the channels' connections run (the runtime this network was
    /// made on: Raft's), whichever runtime asks for a channel.
    runtime: tokio::runtime::Handle,
    /// Where replication round trips are timed.
    stages: fleet_statemachine::WriteStages,
    /// How far this node's log is on disk: as the leader, it tells
    /// followers no commit index past it (see `durable.rs`).
    durable: Option<crate::durable::DurableLog>,
}

/// Spawns a channel's background work (its connection) on one runtime.
#[derive(Clone)]
struct OnRuntime(tokio::runtime::Handle);

impl<F> hyper::rt::Executor<F> for OnRuntime
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    fn execute(&self, work: F) {
        self.0.spawn(work);
    }
}

/// The peer RPCs.
#[derive(Debug, Clone, Copy)]
pub enum PeerMethod {
    AppendEntries,
    Vote,
    InstallSnapshot,
    Forward,
    ReadIndex,
    ChangeMembership,
    NodeStatus,
    Member,
}

impl PeerMethod {
    /// Whether the call changes nothing, so sending it again (to another
    /// leader) is safe.
    pub fn is_read_only(self) -> bool {
        matches!(self, PeerMethod::ReadIndex | PeerMethod::NodeStatus)
    }
}

impl PeerNetwork {
    /// A network that dials with this node's identity, reaching the peers
    /// in `dial` at the addresses given there instead of their membership
    /// addresses. Called on a runtime (Raft's): the connections run there.
    pub fn new(tls: PeerTls, dial: BTreeMap<u64, String>) -> PeerNetwork {
        PeerNetwork {
            tls,
            dial: Arc::new(dial),
            channels: Arc::new(Mutex::new(HashMap::new())),
            runtime: tokio::runtime::Handle::current(),
            stages: Default::default(),
            durable: None,
        }
    }

    /// Holds back commit indexes past what `durable` says the log holds.
    pub(crate) fn with_durable_log(mut self, durable: crate::durable::DurableLog) -> PeerNetwork {
        self.durable = Some(durable);
        self
    }

    /// Times replication round trips in `stages`.
    pub fn with_stages(mut self, stages: fleet_statemachine::WriteStages) -> PeerNetwork {
        self.stages = stages;
        self
    }

    /// The cached channel to peer `id` at `addr` (re-made if its address changed).
    /// Channels connect lazily and reconnect by themselves.
    pub fn channel(&self, id: u64, addr: &str) -> Result<Channel, Error> {
        let addr = self.dial.get(&id).map_or(addr, String::as_str);
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((a, ch)) = channels.get(&id) {
            if a == addr {
                return Ok(ch.clone());
            }
        }
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.tls.ca_pem))
            .identity(Identity::from_pem(&self.tls.cert_pem, &self.tls.key_pem))
            .domain_name(node_server_name(id));
        let channel = Endpoint::from_shared(format!("https://{addr}"))
            .map_err(|e| Error::Invalid(format!("peer {id} address {addr:?}: {e}")))?
            .tls_config(tls)
            .map_err(|e| Error::Invalid(format!("peer {id} TLS: {e}")))?
            .connect_timeout(Duration::from_secs(1))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(5))
            .executor(OnRuntime(self.runtime.clone()))
            .connect_lazy();
        channels.insert(id, (addr.to_string(), channel.clone()));
        Ok(channel)
    }

    /// Calls `method` on peer `id` with an encoded request, decoding the reply.
    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        id: u64,
        addr: &str,
        method: PeerMethod,
        request: &Req,
        timeout: Duration,
    ) -> Result<Resp, tonic::Status> {
        let channel = self.channel(id, addr).map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
        let mut client = peer_client(channel);
        let data = encode(request).map_err(|e| tonic::Status::internal(e.to_string()))?;
        let mut req = tonic::Request::new(Payload { data });
        req.set_timeout(timeout);
        let started = std::time::Instant::now();
        let reply = match method {
            PeerMethod::AppendEntries => client.append_entries(req).await,
            PeerMethod::Vote => client.vote(req).await,
            PeerMethod::InstallSnapshot => client.install_snapshot(req).await,
            PeerMethod::Forward => client.forward(req).await,
            PeerMethod::ReadIndex => client.read_index(req).await,
            PeerMethod::ChangeMembership => client.change_membership(req).await,
            PeerMethod::NodeStatus => client.node_status(req).await,
            PeerMethod::Member => client.member(req).await,
        }?;
        if matches!(method, PeerMethod::Forward) {
            self.stages.since(fleet_statemachine::Stage::forward, started);
        }
        decode(&reply.into_inner().data).map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

/// A client of the peer service on `channel`, taking messages up to the peer limit.
fn peer_client(channel: Channel) -> RaftPeerClient<Channel> {
    RaftPeerClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

impl RaftNetworkFactory<TypeConfig> for PeerNetwork {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        PeerClient {
            target,
            addr: node.addr.clone(),
            network: self.clone(),
            append_budget: AppendBudget::default(),
            append_stream: AppendStream::default(),
        }
    }
}

/// Raft's connection to one peer.
pub struct PeerClient {
    target: u64,
    addr: String,
    network: PeerNetwork,
    append_budget: AppendBudget,
    append_stream: AppendStream,
}

type RpcResult<T, E> = Result<T, RPCError<u64, BasicNode, RaftError<u64, E>>>;

impl PeerClient {
    async fn rpc<Req, Resp, E>(&self, method: PeerMethod, req: &Req, option: &RPCOption) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let reply: Result<Resp, RaftError<u64, E>> =
            self.network.call(self.target, &self.addr, method, req, option.hard_ttl()).await.map_err(unreached)?;
        reply.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    /// Sends an AppendEntries on the stream to the peer, or as a unary call
    /// to a peer that does not know the stream.
    async fn append(
        &mut self,
        rpc: &AppendEntriesRequest<TypeConfig>,
        option: &RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>, openraft::error::Infallible> {
        if self.append_stream.usable(std::time::Instant::now()) {
            let data = encode(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
            let channel =
                self.network.channel(self.target, &self.addr).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
            let open = |requests| async move {
                let replies: Replies = Box::pin(peer_client(channel).append_stream(requests).await?.into_inner());
                Ok(replies)
            };
            match self.append_stream.exchange(data, option.hard_ttl(), open).await {
                Ok(data) => {
                    let reply: Result<AppendEntriesResponse<u64>, RaftError<u64>> =
                        decode(&data).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
                    return reply.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)));
                }
                Err(status) if status.code() == tonic::Code::Unimplemented => {}
                Err(status) => return Err(unreached(status)),
            }
        }
        self.rpc(PeerMethod::AppendEntries, rpc, option).await
    }
}

/// A failed peer call as openraft's error: a peer that could not be reached
/// in time, or any other failure of the exchange.
fn unreached<E: std::error::Error>(status: tonic::Status) -> RPCError<u64, BasicNode, E> {
    match status.code() {
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => RPCError::Unreachable(Unreachable::new(&status)),
        _ => RPCError::Network(NetworkError::new(&status)),
    }
}

/// Half the peer message limit: room for everything around the entries.
const APPEND_BUDGET: usize = MAX_MESSAGE_BYTES / 2;
/// The smallest budget the adaptive cut goes down to.
const MIN_APPEND_BUDGET: usize = 64 * 1024;

/// How many bytes of entries the next AppendEntries to one peer may carry.
///
/// openraft gives every AppendEntries the heartbeat interval to be answered
/// and then sends the same entries again: a batch that takes longer than
/// that to encode, send, decode and fsync on a busy machine (a storm of
/// writes, or a lagging follower sent thousands of entries) would time out
/// on every retry, the follower would never catch up, and the leader would
/// lose it. So the budget halves each time a call did not finish (openraft
/// dropped it at its time-to-live) and doubles back after each one that
/// did, between [`MIN_APPEND_BUDGET`] and [`APPEND_BUDGET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AppendBudget {
    bytes: usize,
    /// A call started and has not finished yet: if the next one finds this
    /// set, that call was dropped before its answer.
    in_flight: bool,
}

impl Default for AppendBudget {
    fn default() -> Self {
        AppendBudget { bytes: APPEND_BUDGET, in_flight: false }
    }
}

impl AppendBudget {
    /// A call starts: the budget it may use.
    fn start(&mut self) -> usize {
        if self.in_flight {
            self.bytes = (self.bytes / 2).max(MIN_APPEND_BUDGET);
        }
        self.in_flight = true;
        self.bytes
    }

    /// The call finished (with any answer: the peer could be reached in time).
    fn finish(&mut self) {
        self.in_flight = false;
        self.bytes = self.bytes.saturating_mul(2).min(APPEND_BUDGET);
    }
}

/// How many of `entries` fit in `budget` bytes, if not all do. openraft
/// then sends that many (a lagging follower is sent many entries at once,
/// and an entry can hold megabytes of commands). A single entry always
/// goes: the batcher keeps entries far below the largest budget.
fn entries_that_fit(entries: &[openraft::Entry<TypeConfig>], budget: usize) -> Option<u64> {
    let mut bytes = 0usize;
    for (i, entry) in entries.iter().enumerate() {
        bytes += match &entry.payload {
            EntryPayload::Normal(proposal) => proposal.encoded_len() + 64,
            EntryPayload::Blank | EntryPayload::Membership(_) => 1024,
        };
        if bytes > budget {
            return (i > 0).then_some(i as u64);
        }
    }
    None
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        mut rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>, openraft::error::Infallible> {
        if let (Some(durable), Some(commit)) = (&self.network.durable, rpc.leader_commit) {
            if !durable.covers(commit.index) {
                // A message without entries is there to carry the commit
                // index: it waits (briefly) for the leader's fsync; one
                // with entries goes at once, committing no further than
                // the entry before them if that is on disk (a follower
                // never moves its commit index back).
                let waited =
                    rpc.entries.is_empty() && durable.wait_for(commit.index, Some(option.soft_ttl() / 2)).await.is_ok();
                if !waited {
                    rpc.leader_commit = rpc.prev_log_id.filter(|p| p.index <= commit.index && durable.covers(p.index));
                }
            }
        }
        let budget = self.append_budget.start();
        if let Some(fits) = entries_that_fit(&rpc.entries, budget) {
            self.append_budget.in_flight = false;
            return Err(PayloadTooLarge::new_entries_hint(fits).into());
        }
        let started = std::time::Instant::now();
        let carries_entries = !rpc.entries.is_empty();
        let answer = self.append(&rpc, &option).await;
        self.append_budget.finish();
        if carries_entries {
            self.network.stages.since(fleet_statemachine::Stage::replicate, started);
        }
        answer
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        self.rpc(PeerMethod::InstallSnapshot, &crate::snapshot_chunk::SnapshotChunk::from(rpc), &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>, openraft::error::Infallible> {
        self.rpc(PeerMethod::Vote, &rpc, &option).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_statemachine::{Command, Proposal};
    use openraft::{CommittedLeaderId, LogId};

    fn entry(index: u64, bytes: usize) -> openraft::Entry<TypeConfig> {
        let command = Command { now: "x".repeat(bytes), ops: vec![] };
        let proposal = Proposal::new(vec![command]).expect("encodable");
        openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(proposal),
        }
    }

    #[test]
    fn append_entries_are_cut_to_what_fits_in_a_message() {
        let small: Vec<_> = (1..=10).map(|i| entry(i, 1000)).collect();
        assert_eq!(entries_that_fit(&small, APPEND_BUDGET), None);
        let big: Vec<_> = (1..=10).map(|i| entry(i, APPEND_BUDGET / 3)).collect();
        assert_eq!(entries_that_fit(&big, APPEND_BUDGET), Some(2));
        // One entry alone always goes, or replication could never move on.
        assert_eq!(entries_that_fit(&[entry(1, APPEND_BUDGET + 1)], APPEND_BUDGET), None);
        assert_eq!(entries_that_fit(&small, 3_000), Some(2));
    }

    #[test]
    fn only_a_peer_that_cannot_be_reached_is_unreachable_not_a_late_reply() {
        let kind = |status| match unreached::<openraft::error::Infallible>(status) {
            RPCError::Unreachable(_) => "unreachable",
            RPCError::Network(_) => "network",
            _ => "other",
        };
        assert_eq!(kind(tonic::Status::unavailable("tcp connect error")), "unreachable");
        assert_eq!(kind(tonic::Status::cancelled("no reply on the append stream within 100ms")), "network");
        assert_eq!(kind(tonic::Status::internal("decode")), "network");
    }

    #[test]
    fn the_budget_halves_after_each_call_dropped_unanswered_and_grows_back_after_answers() {
        let mut budget = AppendBudget::default();
        assert_eq!(budget.start(), APPEND_BUDGET);
        budget.finish();
        assert_eq!(budget.start(), APPEND_BUDGET, "answered: unchanged at the top");
        // Dropped at openraft's time-to-live: never finished.
        assert_eq!(budget.start(), APPEND_BUDGET / 2);
        assert_eq!(budget.start(), APPEND_BUDGET / 4);
        for _ in 0..40 {
            budget.start();
        }
        assert_eq!(budget.start(), MIN_APPEND_BUDGET, "never below the floor");
        budget.finish();
        assert_eq!(budget.start(), 2 * MIN_APPEND_BUDGET);
        budget.finish();
        assert_eq!(budget.start(), 4 * MIN_APPEND_BUDGET);
        for _ in 0..40 {
            budget.finish();
        }
        assert_eq!(budget.start(), APPEND_BUDGET, "never above the message budget");
    }
}
