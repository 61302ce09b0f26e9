//! The member RPCs. Joining, renewal and heartbeats run on the leader: a
//! follower forwards them (`MemberCall`) and relays the leader's answer.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fleet_api::member::{self, member_namespace, HeartbeatReport};
use fleet_api::time::now_rfc3339;
use fleet_api::{names, Object};
use fleet_proto::fleet::{CreateTokenResponse, JoinResponse};
use fleet_raft::consensus::Routed;
use fleet_raft::{codec, Consensus, MemberHandler, PeerMethod};
use fleet_statemachine::{Command, Op, StoreError};
use serde::{Deserialize, Serialize};

use super::health::Arrivals;
use super::internal::{self, CredentialSpec, TokenStatus};
use super::signer::Signer;
use super::{authz, status, tokens};
use crate::blocking::blocking;
use crate::error::{raft_error, RequestError};

/// Certificates a member keeps valid at once (the one it holds and its renewal).
const MAX_SERIALS: usize = 2;

/// A member call forwarded to the leader.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MemberCall {
    Join { cluster: String, token: String, csr_pem: String },
    Renew { cluster: String, serial: String, csr_pem: String },
    Heartbeat { cluster: String, report: Vec<u8> },
    Ages,
}

/// The leader's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MemberReply {
    Certificate { certificate_pem: String, ca_pem: String, expires_at: String },
    Heartbeat { period_seconds: u64 },
    Ages(std::collections::BTreeMap<String, u64>),
}

/// Tries of a heartbeat's status write that lost a race to another writer.
const HEARTBEAT_WRITE_ATTEMPTS: u32 = 3;

/// A refusal that crossed the peer channel, as its gRPC code and message
/// (the form older nodes send and read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireStatus {
    code: i32,
    message: String,
}

impl From<RequestError> for WireStatus {
    fn from(s: RequestError) -> Self {
        WireStatus { code: s.code() as i32, message: s.message().to_string() }
    }
}

impl From<WireStatus> for RequestError {
    fn from(w: WireStatus) -> Self {
        RequestError::from_code(tonic::Code::from(w.code), w.message)
    }
}

type Outcome = Result<MemberReply, WireStatus>;

/// Member support of one node.
pub struct MemberService {
    consensus: Arc<Consensus>,
    signer: Option<Arc<Signer>>,
    ca_fingerprint: String,
    /// Heartbeat arrivals (meaningful on the leader).
    pub arrivals: Arc<Arrivals>,
}

/// Checks that a cluster name can name a member (and its namespace).
pub fn check_cluster_name(cluster: &str) -> Result<(), RequestError> {
    match names::dns1123_label_error(&member_namespace(cluster)) {
        _ if cluster.is_empty() => Err(RequestError::invalid("cluster: Required value: name the member cluster")),
        Some(detail) => Err(RequestError::invalid(format!(
            "cluster: Invalid value: {cluster:?}: the namespace {:?} would be invalid: {detail}",
            member_namespace(cluster)
        ))),
        None => Ok(()),
    }
}

impl MemberService {
    /// Member support over this node's consensus; `signer` is `None` when the
    /// node has no CA key.
    pub fn new(consensus: Arc<Consensus>, signer: Option<Signer>, ca_fingerprint: String) -> MemberService {
        MemberService {
            consensus,
            signer: signer.map(Arc::new),
            ca_fingerprint,
            arrivals: Arc::new(Arrivals::default()),
        }
    }

    /// Creates a bootstrap token for `cluster`.
    pub async fn create_token(&self, cluster: &str, ttl: Duration) -> Result<CreateTokenResponse, RequestError> {
        check_cluster_name(cluster)?;
        let token = tokens::new_token(cluster, ttl)?;
        self.consensus
            .write(Command { now: now_rfc3339(), ops: vec![Op::Create { object: token.object }] })
            .await
            .map_err(raft_error)?;
        self.collect_dead_tokens().await;
        Ok(CreateTokenResponse {
            token: token.token,
            ca_fingerprint: self.ca_fingerprint.clone(),
            expires_at: token.expires_at,
        })
    }

    /// Deletes used and expired tokens (each at the version read, so a token
    /// used meanwhile is left to the next pass). Best effort: a failure is
    /// logged, and the next token created tries again.
    async fn collect_dead_tokens(&self) {
        let store = self.consensus.store().clone();
        let listed = blocking(move || {
            let query = fleet_statemachine::ListQuery {
                group: internal::INTERNAL_GROUP.into(),
                kind: internal::TOKEN_KIND.into(),
                namespace: Some(internal::SYSTEM_NAMESPACE.into()),
                selector: None,
            };
            store.list(&query).map_err(|e| RequestError::internal(e.to_string()))
        })
        .await;
        let now = SystemTime::now();
        let ops: Vec<Op> = match listed {
            Ok((objects, _)) => objects
                .iter()
                .filter(|o| tokens::is_dead(o, now))
                .map(|o| Op::Delete {
                    key: fleet_api::ObjectKey::of(o),
                    resource_version: o.metadata.resource_version_number(),
                })
                .collect(),
            Err(e) => {
                tracing::warn!("listing bootstrap tokens to collect: {e}");
                return;
            }
        };
        if ops.is_empty() {
            return;
        }
        let count = ops.len();
        match self.consensus.write(Command { now: now_rfc3339(), ops }).await {
            Ok(_) => tracing::info!(count, "deleted used and expired bootstrap tokens"),
            Err(e) => tracing::warn!("deleting {count} used and expired bootstrap tokens: {e}"),
        }
    }

    /// Runs a member call on the leader (here or forwarded).
    pub async fn call(&self, call: MemberCall) -> Result<MemberReply, RequestError> {
        let outcome: Outcome = self
            .consensus
            .on_leader(PeerMethod::Member, &call, || self.local(call.clone()))
            .await
            .map_err(raft_error)?;
        outcome.map_err(RequestError::from)
    }

    async fn local(&self, call: MemberCall) -> Result<Outcome, Routed> {
        let result = match call {
            MemberCall::Join { cluster, token, csr_pem } => self.join_on_leader(&cluster, &token, &csr_pem).await,
            MemberCall::Renew { cluster, serial, csr_pem } => self.renew_on_leader(&cluster, &serial, &csr_pem).await,
            MemberCall::Heartbeat { cluster, report } => self.heartbeat_on_leader(&cluster, &report).await,
            MemberCall::Ages => Ok(MemberReply::Ages(
                self.arrivals.ages().into_iter().map(|(c, d)| (c, d.as_millis() as u64)).collect(),
            )),
        };
        Ok(result.map_err(WireStatus::from))
    }

    fn signer(&self) -> Result<&Signer, RequestError> {
        self.signer.as_deref().ok_or_else(|| {
            RequestError::precondition(
                "the hub leader has no CA key (ca-key.pem in --tls-dir) to sign member certificates",
            )
        })
    }

    async fn read(&self, key: fleet_api::ObjectKey) -> Result<Option<Object>, RequestError> {
        let store = self.consensus.store().clone();
        blocking(move || store.get(&key).map(|(o, _)| o).map_err(crate::error::storage_error)).await
    }

    fn certificate(&self, issued: super::signer::Issued) -> Result<MemberReply, RequestError> {
        Ok(MemberReply::Certificate {
            certificate_pem: issued.certificate_pem,
            ca_pem: self.signer()?.ca_pem().to_string(),
            expires_at: issued.expires_at,
        })
    }

    async fn join_on_leader(&self, cluster: &str, token: &str, csr_pem: &str) -> Result<MemberReply, RequestError> {
        check_cluster_name(cluster)?;
        let (id, secret) = tokens::parse(token)?;
        self.consensus.linearizable_index().await.map_err(raft_error)?;
        let stored = self.read(internal::token_key(id)).await?;
        tokens::check(stored.as_ref(), id, secret, cluster, SystemTime::now())?;
        let issued = self.signer()?.sign(csr_pem, cluster)?;
        let now = now_rfc3339();
        let mut ops = Vec::new();
        // Consume the token, conditional on the version just read: of two
        // joins racing with one token, exactly one commits.
        if let Some(mut used) = stored {
            let status = TokenStatus { used_at: now.clone(), certificate_serial: issued.serial.clone() };
            used.rest.insert("status".into(), fleet_api::typed::encode(&status));
            ops.push(Op::UpdateStatus { object: used });
        }
        let mc_key = fleet_api::ObjectKey::new(fleet_api::kinds::FLEET_CLUSTER_GROUP, "MemberCluster", "", cluster);
        let owner_uid = match self.read(mc_key).await? {
            Some(mc) => mc.metadata.uid,
            None => {
                let mut mc = member::new_member_cluster(cluster);
                member::prepare(&mut mc).map_err(|e| RequestError::internal(e.to_string()))?;
                mc.metadata.uid = uuid::Uuid::new_v4().to_string();
                let uid = mc.metadata.uid.clone();
                ops.push(Op::Create { object: mc });
                uid
            }
        };
        // A new join replaces the member's previous credentials.
        let credential = CredentialSpec { serials: vec![issued.serial.clone()] };
        ops.push(Op::Apply {
            object: internal::credential_object(cluster, &credential, &owner_uid),
            uid: uuid::Uuid::new_v4().to_string(),
        });
        match self.consensus.write(Command { now, ops }).await {
            Ok(_) => self.certificate(issued),
            Err(fleet_raft::Error::Refused(StoreError::Conflict { .. })) => {
                Err(RequestError::forbidden(format!("bootstrap token {id}: was used by a concurrent join")))
            }
            Err(e) => Err(raft_error(e)),
        }
    }

    async fn renew_on_leader(&self, cluster: &str, serial: &str, csr_pem: &str) -> Result<MemberReply, RequestError> {
        self.consensus.linearizable_index().await.map_err(raft_error)?;
        let store = self.consensus.store().clone();
        let (c, s) = (cluster.to_string(), serial.to_string());
        blocking(move || authz::check_credential(&store, &c, &s)).await?;
        let issued = self.signer()?.sign(csr_pem, cluster)?;
        let Some(mut record) = self.read(internal::credential_key(cluster)).await? else {
            return Err(RequestError::forbidden(format!("member cluster {cluster:?} has no credentials")));
        };
        let mut spec: CredentialSpec = internal::spec(&record).unwrap_or_default();
        spec.serials.retain(|s| s == serial);
        spec.serials.push(issued.serial.clone());
        spec.serials.truncate(MAX_SERIALS);
        record.rest.insert("spec".into(), fleet_api::typed::encode(&spec));
        let op = Op::Update { object: record };
        self.consensus.write(Command { now: now_rfc3339(), ops: vec![op] }).await.map_err(raft_error)?;
        self.certificate(issued)
    }

    async fn heartbeat_on_leader(&self, cluster: &str, report: &[u8]) -> Result<MemberReply, RequestError> {
        self.arrivals.record(cluster);
        let report: HeartbeatReport = serde_json::from_slice(report)
            .map_err(|e| RequestError::invalid(format!("report: not a valid heartbeat report: {e}")))?;
        let mc_key = fleet_api::ObjectKey::new(fleet_api::kinds::FLEET_CLUSTER_GROUP, "MemberCluster", "", cluster);
        // The status write is conditional on what was read. Another writer
        // of the MemberCluster (its spec, the health checker) may win the
        // race; the report is then applied again to what it wrote, so that
        // a changed property is not a whole heartbeat period late.
        for attempt in 1..=HEARTBEAT_WRITE_ATTEMPTS {
            let Some(mc) = self.read(mc_key.clone()).await? else {
                return Err(RequestError::forbidden(format!("member cluster {cluster:?} has left the fleet")));
            };
            let period = member::spec_of(&mc).heartbeat_period().max(1) as u64;
            let Some(next) = status::after_heartbeat(&member::status_of(&mc), &report, &now_rfc3339()) else {
                return Ok(MemberReply::Heartbeat { period_seconds: period });
            };
            let mut updated = mc;
            member::set_status(&mut updated, &next);
            let command = Command { now: now_rfc3339(), ops: vec![Op::UpdateStatus { object: updated }] };
            match self.consensus.write(command).await {
                Ok(_) => {
                    tracing::trace!(cluster, "heartbeat changed the status");
                    return Ok(MemberReply::Heartbeat { period_seconds: period });
                }
                Err(e) if attempt == HEARTBEAT_WRITE_ATTEMPTS => {
                    tracing::debug!(cluster, "heartbeat status write skipped: {e}");
                    return Ok(MemberReply::Heartbeat { period_seconds: period });
                }
                Err(e) => tracing::debug!(cluster, attempt, "heartbeat status write lost a race, again: {e}"),
            }
        }
        Err(RequestError::internal("heartbeat: no attempt made"))
    }

    /// The certificate answer as the proto has it.
    pub fn join_response(reply: MemberReply) -> Result<JoinResponse, RequestError> {
        match reply {
            MemberReply::Certificate { certificate_pem, ca_pem, expires_at } => {
                Ok(JoinResponse { certificate_pem, ca_pem, expires_at })
            }
            _ => Err(RequestError::internal("unexpected reply to a certificate request")),
        }
    }
}

impl MemberHandler for MemberService {
    fn handle(
        &self,
        request: Vec<u8>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u8>, tonic::Status>> + Send + '_>> {
        Box::pin(async move {
            let call: MemberCall =
                codec::decode(&request).map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
            let leading = self.consensus.leader().is_some_and(|(l, _)| l == self.consensus.id());
            let result: Result<Outcome, Routed> = if leading { self.local(call).await } else { Err(Routed::NotLeader) };
            codec::encode(&result).map_err(|e| tonic::Status::internal(e.to_string()))
        })
    }
}
