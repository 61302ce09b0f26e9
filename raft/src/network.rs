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
    /// addresses.
    pub fn new(tls: PeerTls, dial: BTreeMap<u64, String>) -> PeerNetwork {
        PeerNetwork { tls, dial: Arc::new(dial), channels: Arc::new(Mutex::new(HashMap::new())) }
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
        let mut client = RaftPeerClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let data = encode(request).map_err(|e| tonic::Status::internal(e.to_string()))?;
        let mut req = tonic::Request::new(Payload { data });
        req.set_timeout(timeout);
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
        decode(&reply.into_inner().data).map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

impl RaftNetworkFactory<TypeConfig> for PeerNetwork {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        PeerClient { target, addr: node.addr.clone(), network: self.clone() }
    }
}

/// Raft's connection to one peer.
pub struct PeerClient {
    target: u64,
    addr: String,
    network: PeerNetwork,
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
            self.network.call(self.target, &self.addr, method, req, option.hard_ttl()).await.map_err(|status| {
                match status.code() {
                    tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => {
                        RPCError::Unreachable(Unreachable::new(&status))
                    }
                    _ => RPCError::Network(NetworkError::new(&status)),
                }
            })?;
        reply.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

/// Half the peer message limit: room for everything around the entries.
const APPEND_BUDGET: usize = MAX_MESSAGE_BYTES / 2;

/// How many of `entries` fit in one AppendEntries message, if not all do.
/// openraft then sends that many (a lagging follower is sent many entries
/// at once, and an entry can hold megabytes of commands). A single entry
/// always goes: the batcher keeps entries far below the budget.
fn entries_that_fit(entries: &[openraft::Entry<TypeConfig>]) -> Option<u64> {
    let mut bytes = 0usize;
    for (i, entry) in entries.iter().enumerate() {
        bytes += match &entry.payload {
            EntryPayload::Normal(proposal) => proposal.encoded_len() + 64,
            EntryPayload::Blank | EntryPayload::Membership(_) => 1024,
        };
        if bytes > APPEND_BUDGET {
            return (i > 0).then_some(i as u64);
        }
    }
    None
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>, openraft::error::Infallible> {
        if let Some(fits) = entries_that_fit(&rpc.entries) {
            return Err(PayloadTooLarge::new_entries_hint(fits).into());
        }
        self.rpc(PeerMethod::AppendEntries, &rpc, &option).await
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
        assert_eq!(entries_that_fit(&small), None);
        let big: Vec<_> = (1..=10).map(|i| entry(i, APPEND_BUDGET / 3)).collect();
        assert_eq!(entries_that_fit(&big), Some(2));
        // One entry alone always goes, or replication could never move on.
        assert_eq!(entries_that_fit(&[entry(1, APPEND_BUDGET + 1)]), None);
    }
}
