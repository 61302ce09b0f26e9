//! Incoming peer traffic. Every call must come with a node certificate from
//! the fleet CA, and Raft messages must claim the node id that certificate
//! names: a node cannot vote or replicate as another.
//!
//! And only from a node of the hub: a node removed from the membership is
//! refused every call (it cannot vote, replicate, propose, read or ask for
//! status) once this node has applied the change that removed it — on the
//! leader when the change commits, on followers with the next replication
//! message after that, on a node that was down once it catches up. Calls
//! other than replication (AppendEntries, InstallSnapshot) also need the
//! caller in this node's latest membership; replication from a node not yet
//! known is accepted, so a node that missed an addition can still be caught
//! up by the new leader. An uninitialized node (no membership yet) accepts
//! any node certificate.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use fleet_proto::peer::raft_peer_server::RaftPeer;
use fleet_proto::peer::{Payload, Sequenced};
use fleet_proto::tls::{presented, Identity};
use fleet_statemachine::{Proposal, TypeConfig};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::codec::{decode, encode};
use crate::consensus::{Consensus, MembershipChange, Routed};
use crate::snapshot_chunk::SnapshotChunk;

/// Leader-side handling of member calls (join, renewal, heartbeat) that a
/// follower forwarded. Request and reply are opaque encoded bytes: the node
/// defines them, consensus only carries them.
pub trait MemberHandler: Send + Sync + 'static {
    /// Handles one forwarded call.
    fn handle(&self, request: Vec<u8>) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, Status>> + Send + '_>>;
}

/// The gRPC `RaftPeer` service of one node.
pub struct PeerService {
    consensus: Arc<Consensus>,
    members: Option<Arc<dyn MemberHandler>>,
    /// Where forwarded member calls run: the runtime this service was made
    /// on (the node's main one), not the Raft runtime peer calls arrive on,
    /// so that a burst of joins does not hold up replication.
    member_runtime: tokio::runtime::Handle,
    /// Turns true when the node stops: long-lived append streams end then,
    /// so that the server's graceful shutdown need not wait for the leader.
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl PeerService {
    /// Serves peer traffic for this node's consensus until `stopping` turns
    /// true; `members` handles forwarded member calls when this node leads,
    /// on the runtime this is called on.
    pub fn new(
        consensus: Arc<Consensus>,
        members: Option<Arc<dyn MemberHandler>>,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> PeerService {
        PeerService { consensus, members, member_runtime: tokio::runtime::Handle::current(), stopping }
    }
}

/// The node id named by the caller's client certificate.
fn caller_node<T>(request: &Request<T>) -> Result<u64, Status> {
    let certs = request
        .peer_certs()
        .ok_or_else(|| Status::unauthenticated("peer traffic requires a node client certificate"))?;
    let cert = certs.first().ok_or_else(|| Status::unauthenticated("no client certificate presented"))?;
    match presented(cert.as_ref()).map(|p| p.identity) {
        Ok(Identity::Node(id)) => Ok(id),
        Ok(other) => Err(Status::permission_denied(format!("{other} is not a hub node and may not send peer traffic"))),
        Err(e) => Err(Status::unauthenticated(e.to_string())),
    }
}

/// Refuses a caller removed from the membership and, unless the call is
/// replication, one not in this node's latest membership.
fn admit(consensus: &Consensus, caller: u64, replication: bool) -> Result<(), Status> {
    if consensus.store().is_retired(caller) {
        return Err(Status::permission_denied(format!(
            "node {caller} was removed from this hub's membership: its node certificate is refused for peer \
             traffic (an admin may add it back with `fleetctl cluster add-node`)"
        )));
    }
    if replication {
        return Ok(());
    }
    let metrics = consensus.raft().metrics().borrow().clone();
    let membership = metrics.membership_config.membership();
    if membership.nodes().next().is_none() || membership.get_node(&caller).is_some() {
        Ok(())
    } else {
        Err(Status::permission_denied(format!(
            "node {caller} is not a member of this hub: only its members may send peer traffic (add it with \
             `fleetctl cluster add-node`)"
        )))
    }
}

/// The caller's node id, if it may make this call (see [`admit`]).
fn member_node<T>(consensus: &Consensus, request: &Request<T>, replication: bool) -> Result<u64, Status> {
    let caller = caller_node(request)?;
    admit(consensus, caller, replication)?;
    Ok(caller)
}

fn check_claim(caller: u64, claimed: u64) -> Result<(), Status> {
    if caller == claimed {
        Ok(())
    } else {
        Err(Status::permission_denied(format!(
            "certificate names node {caller} but the request claims to come from node {claimed}"
        )))
    }
}

/// Handles a Raft message received in full to the end, on its own task,
/// even if the sender stops waiting for the answer. openraft gives every
/// AppendEntries only the heartbeat interval to be answered; one that takes
/// longer to decode, append and fsync (a large entry on a busy machine) would
/// otherwise be dropped half-handled, again on every retry: the follower
/// would never hear from its leader, start elections, and the hub would
/// change leaders over and over while making no progress. Handled to the
/// end, the message resets the election timer and its entries are in the
/// log when the leader's retry arrives, which is then answered at once.
async fn to_completion<F>(handling: F) -> Result<Response<Payload>, Status>
where
    F: Future<Output = Result<Response<Payload>, Status>> + Send + 'static,
{
    tokio::spawn(handling).await.map_err(|e| Status::internal(format!("handling a Raft message failed: {e}")))?
}

fn payload<T: DeserializeOwned>(request: Request<Payload>) -> Result<T, Status> {
    decoded(&request.into_inner().data)
}

fn decoded<T: DeserializeOwned>(data: &[u8]) -> Result<T, Status> {
    decode(data).map_err(|e| Status::invalid_argument(e.to_string()))
}

/// Handles one AppendEntries from `caller`, already admitted, as a unary
/// call or a message of its append stream, and returns the encoded answer.
async fn append_entries(consensus: Arc<Consensus>, caller: u64, data: Vec<u8>) -> Result<Vec<u8>, Status> {
    let started = std::time::Instant::now();
    let rpc: AppendEntriesRequest<TypeConfig> = decoded(&data)?;
    check_claim(caller, rpc.vote.leader_id.node_id)?;
    let carries_entries = !rpc.entries.is_empty();
    let answer = encode(&consensus.raft().append_entries(rpc).await).map_err(|e| Status::internal(e.to_string()));
    if carries_entries {
        consensus.store().metrics().stages.since(fleet_statemachine::Stage::follower_append, started);
    }
    answer
}

fn reply<T: Serialize>(value: &T) -> Result<Response<Payload>, Status> {
    let data = encode(value).map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(Payload { data }))
}

#[tonic::async_trait]
impl RaftPeer for PeerService {
    async fn append_entries(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        let caller = member_node(&self.consensus, &request, true)?;
        let consensus = self.consensus.clone();
        to_completion(async move {
            let data = append_entries(consensus, caller, request.into_inner().data).await?;
            Ok(Response::new(Payload { data }))
        })
        .await
    }

    type AppendStreamStream = ReceiverStream<Result<Sequenced, Status>>;

    async fn append_stream(
        &self,
        request: Request<Streaming<Sequenced>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        let caller = member_node(&self.consensus, &request, true)?;
        let consensus = self.consensus.clone();
        let mut stopping = self.stopping.clone();
        let stop = async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        };
        let replies = crate::append_stream::serve(request.into_inner(), stop, move |data| {
            let consensus = consensus.clone();
            async move {
                // Checked for each message: a stream outlives the membership
                // change that retires its sender.
                admit(&consensus, caller, true)?;
                append_entries(consensus, caller, data).await
            }
        });
        Ok(Response::new(replies))
    }

    async fn vote(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        let caller = member_node(&self.consensus, &request, false)?;
        let raft = self.consensus.raft().clone();
        to_completion(async move {
            let rpc: VoteRequest<u64> = payload(request)?;
            check_claim(caller, rpc.vote.leader_id.node_id)?;
            reply(&raft.vote(rpc).await)
        })
        .await
    }

    async fn install_snapshot(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        let caller = member_node(&self.consensus, &request, true)?;
        let raft = self.consensus.raft().clone();
        to_completion(async move {
            let rpc: InstallSnapshotRequest<TypeConfig> = payload::<SnapshotChunk>(request)?.into();
            check_claim(caller, rpc.vote.leader_id.node_id)?;
            reply(&raft.install_snapshot(rpc).await)
        })
        .await
    }

    async fn forward(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        member_node(&self.consensus, &request, false)?;
        let proposal: Proposal = payload(request)?;
        // Decoded here, before it is merged into an entry: an entry whose
        // commands did not decode would fail to apply on every node.
        proposal.commands().map_err(|e| Status::invalid_argument(e.to_string()))?;
        reply(&self.consensus.write_forwarded(proposal).await)
    }

    async fn read_index(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        member_node(&self.consensus, &request, false)?;
        let _: () = payload(request)?;
        reply(&self.consensus.read_index_on_leader().await)
    }

    async fn change_membership(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        member_node(&self.consensus, &request, false)?;
        let change: MembershipChange = payload(request)?;
        let result: Result<(), Routed> = self.consensus.change_membership_on_leader(change).await;
        reply(&result)
    }

    async fn member(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        member_node(&self.consensus, &request, false)?;
        let handler = self.members.clone().ok_or_else(|| Status::unimplemented("this node handles no member calls"))?;
        let data = request.into_inner().data;
        let handled = self.member_runtime.spawn(async move { handler.handle(data).await });
        let data = handled.await.map_err(|e| Status::internal(format!("handling a member call failed: {e}")))??;
        Ok(Response::new(Payload { data }))
    }

    async fn node_status(&self, request: Request<Payload>) -> Result<Response<Payload>, Status> {
        member_node(&self.consensus, &request, false)?;
        let digest: Option<bool> = payload(request)?;
        reply(&self.consensus.local_status_with(digest.unwrap_or(false)).await)
    }
}
