//! Gauges that describe state rather than count events: read fresh from
//! consensus, the store and the heartbeat table at each scrape.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

use fleet_api::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::Object;
use fleet_raft::Consensus;
use fleet_statemachine::ListQuery;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::members::health::Arrivals;

/// What a scrape reads on this node. Consensus is held weakly: the
/// registry lives as long as the process, and holding the node's stores
/// past its shutdown would keep redb from closing its files cleanly.
#[derive(Clone)]
pub struct Node {
    pub consensus: Weak<Consensus>,
    pub arrivals: Arc<Arrivals>,
    pub data_dir: PathBuf,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ClusterLabel {
    cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ConditionLabels {
    kind: String,
    condition: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct FileLabel {
    file: &'static str,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The state gauges (and the leader-change counter, kept by a task).
pub(super) struct StateGauges {
    has_leader: Gauge,
    is_leader: Gauge,
    term: Gauge,
    last_applied: Gauge,
    last_log_index: Gauge,
    log_entries: Gauge,
    snapshot_index: Gauge,
    oldest_resumable: Gauge,
    pub(super) leader_changes: Counter,
    file_bytes: Family<FileLabel, Gauge>,
    members: Gauge,
    members_joined: Gauge,
    members_healthy: Gauge,
    heartbeat_age: Family<ClusterLabel, FloatGauge>,
    placements: Family<ConditionLabels, Gauge>,
}

impl StateGauges {
    pub(super) fn register(registry: &mut Registry) -> StateGauges {
        let g = StateGauges {
            has_leader: Gauge::default(),
            is_leader: Gauge::default(),
            term: Gauge::default(),
            last_applied: Gauge::default(),
            last_log_index: Gauge::default(),
            log_entries: Gauge::default(),
            snapshot_index: Gauge::default(),
            oldest_resumable: Gauge::default(),
            leader_changes: Counter::default(),
            file_bytes: Family::default(),
            members: Gauge::default(),
            members_joined: Gauge::default(),
            members_healthy: Gauge::default(),
            heartbeat_age: Family::default(),
            placements: Family::default(),
        };
        registry.register("server_has_leader", "1 if this node knows a leader", g.has_leader.clone());
        registry.register("server_is_leader", "1 if this node is the leader", g.is_leader.clone());
        registry.register(
            "server_leader_changes_seen",
            "Leader changes this node has seen since it started",
            g.leader_changes.clone(),
        );
        registry.register("raft_term", "Current Raft term", g.term.clone());
        registry.register("raft_last_applied", "Index of the last entry applied here", g.last_applied.clone());
        registry.register(
            "raft_last_log_index",
            "Index of the last entry in this node's log",
            g.last_log_index.clone(),
        );
        registry.register("raft_log_entries", "Entries in this node's log (not yet purged)", g.log_entries.clone());
        registry.register(
            "raft_snapshot_index",
            "Last index covered by this node's latest snapshot",
            g.snapshot_index.clone(),
        );
        registry.register(
            "watch_oldest_resumable",
            "Oldest resourceVersion a watch can resume from",
            g.oldest_resumable.clone(),
        );
        registry.register(
            "disk_size_bytes",
            "Size of this node's files: the Raft log (raft_log) and the state machine, which is the snapshot (state)",
            g.file_bytes.clone(),
        );
        registry.register("member_clusters", "MemberClusters stored on the hub", g.members.clone());
        registry.register(
            "member_clusters_joined",
            "MemberClusters whose Joined condition is True",
            g.members_joined.clone(),
        );
        registry.register(
            "member_clusters_healthy",
            "MemberClusters whose Healthy condition is True",
            g.members_healthy.clone(),
        );
        registry.register(
            "member_heartbeat_age_seconds",
            "Seconds since the leader last heard each cluster's heartbeat (leader only)",
            g.heartbeat_age.clone(),
        );
        registry.register(
            "placements",
            "Placements by kind and each condition's type and status",
            g.placements.clone(),
        );
        g
    }
}

/// Registers the counters and histograms consensus and the store keep.
pub(super) fn register_consensus(registry: &mut Registry, consensus: &Consensus) {
    let raft = consensus.metrics().clone();
    let store = consensus.store().metrics().clone();
    registry.register(
        "server_proposals_committed",
        "Commands proposed through this node that committed",
        raft.proposals_committed,
    );
    registry.register(
        "server_proposals_failed",
        "Commands proposed through this node that did not commit",
        raft.proposals_failed,
    );
    registry.register(
        "server_proposals_pending",
        "Commands proposed through this node, not yet answered",
        raft.proposals_pending,
    );
    registry.register(
        "server_proposals_applied",
        "Commands this node has applied since it started",
        store.applied_commands,
    );
    registry.register(
        "server_proposal_commit_duration_seconds",
        "From a command's submission on this node to its commit",
        raft.commit_seconds,
    );
    registry.register(
        "disk_wal_fsync_duration_seconds",
        "Syncs (fdatasync) of the Raft log's write-ahead log",
        raft.log_fsync_seconds,
    );
    registry.register(
        "disk_backend_commit_duration_seconds",
        "Durable commits (fsync) of the state machine file",
        store.commit_seconds,
    );
    registry.register(
        "write_stage_seconds",
        "Where the time of writes goes on this node, stage by stage (stages overlap)",
        store.stages.family(),
    );
}

/// Counts leader changes: every time this node learns of a new leader.
/// Ends when Raft stops.
pub(super) async fn count_leader_changes(
    mut metrics: tokio::sync::watch::Receiver<openraft::metrics::RaftServerMetrics<u64, openraft::BasicNode>>,
    changes: Counter,
) {
    let mut last = None;
    loop {
        let leader = metrics.borrow_and_update().current_leader;
        if leader.is_some() && leader != last {
            changes.inc();
        }
        if leader.is_some() {
            last = leader;
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

fn as_gauge(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Sets every state gauge from what this node knows now.
pub(super) async fn refresh(node: &Node, g: &StateGauges) {
    let Some(consensus) = node.consensus.upgrade() else { return };
    let metrics = consensus.raft().metrics().borrow().clone();
    let id = consensus.id();
    g.has_leader.set(i64::from(metrics.current_leader.is_some()));
    g.is_leader.set(i64::from(metrics.current_leader == Some(id)));
    g.term.set(as_gauge(metrics.current_term));
    let last_log = metrics.last_log_index.unwrap_or(0);
    let purged = metrics.purged.map(|l| l.index).unwrap_or(0);
    g.last_applied.set(as_gauge(metrics.last_applied.map(|l| l.index).unwrap_or(0)));
    g.last_log_index.set(as_gauge(last_log));
    g.log_entries.set(as_gauge(last_log.saturating_sub(purged)));
    g.snapshot_index.set(as_gauge(metrics.snapshot.map(|l| l.index).unwrap_or(0)));
    g.oldest_resumable.set(as_gauge(consensus.store().hub().oldest_resumable()));
    let log_dir = node.data_dir.join(fleet_raft::consensus::LOG_DIR);
    let log_bytes = std::fs::read_dir(&log_dir)
        .map(|items| items.filter_map(|i| i.ok()?.metadata().ok()).map(|m| m.len()).sum::<u64>())
        .unwrap_or(0);
    let state_bytes = std::fs::metadata(node.data_dir.join("state/state.redb")).map(|m| m.len()).unwrap_or(0);
    for (file, bytes) in [("raft_log", log_bytes), ("state", state_bytes)] {
        g.file_bytes.get_or_create(&FileLabel { file }).set(as_gauge(bytes));
    }
    g.heartbeat_age.clear();
    for (cluster, age) in node.arrivals.ages() {
        g.heartbeat_age.get_or_create(&ClusterLabel { cluster }).set(age.as_secs_f64());
    }
    let store = consensus.store().clone();
    drop(consensus);
    let counted = tokio::task::spawn_blocking(move || count_objects(&store)).await;
    match counted {
        Ok(Ok(counts)) => {
            g.members.set(counts.members);
            g.members_joined.set(counts.joined);
            g.members_healthy.set(counts.healthy);
            g.placements.clear();
            for ((kind, condition, status), n) in counts.placements {
                g.placements.get_or_create(&ConditionLabels { kind, condition, status }).set(n);
            }
        }
        Ok(Err(e)) => tracing::warn!("metrics: reading the store: {e}"),
        Err(e) => tracing::warn!("metrics: store task: {e}"),
    }
}

/// Members and placement conditions, counted from the store.
#[derive(Default)]
struct Counts {
    members: i64,
    joined: i64,
    healthy: i64,
    placements: BTreeMap<(String, String, String), i64>,
}

/// The placement kinds the hub schedules: (group, kind).
const PLACEMENT_KINDS: [(&str, &str); 3] = [
    (FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement"),
    (FLEET_PLACEMENT_GROUP, "ResourcePlacement"),
    (fleet_api::ocm::CLUSTER_GROUP, "Placement"),
];

fn query(group: &str, kind: &str) -> ListQuery {
    ListQuery { group: group.to_string(), kind: kind.to_string(), namespace: None, selector: None }
}

/// `(type, status)` of each condition in an object's status.
fn conditions(object: &Object) -> Vec<(String, String)> {
    let Some(list) = object.rest.get("status").and_then(|s| s.get("conditions")).and_then(|c| c.as_array()) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            let kind = c.get("type")?.as_str()?;
            let status = c.get("status").and_then(|s| s.as_str()).unwrap_or("Unknown");
            Some((kind.to_string(), status.to_string()))
        })
        .collect()
}

fn count_objects(store: &fleet_statemachine::Store) -> Result<Counts, fleet_statemachine::Error> {
    let mut counts = Counts::default();
    let (members, _) = store.list(&query(FLEET_CLUSTER_GROUP, "MemberCluster"))?;
    for member in &members {
        counts.members += 1;
        for (kind, status) in conditions(member) {
            let is_true = status == "True";
            match kind.as_str() {
                fleet_api::member::CONDITION_JOINED if is_true => counts.joined += 1,
                fleet_api::member::CONDITION_HEALTHY if is_true => counts.healthy += 1,
                _ => {}
            }
        }
    }
    for (group, kind) in PLACEMENT_KINDS {
        let (placements, _) = store.list(&query(group, kind))?;
        for placement in &placements {
            for (condition, status) in conditions(placement) {
                *counts.placements.entry((kind.to_string(), condition, status)).or_default() += 1;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_condition_types_and_statuses() {
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "X", "metadata": {"name": "a"},
            "status": {"conditions": [
                {"type": "Joined", "status": "True"},
                {"type": "Healthy"},
                {"status": "False"}
            ]}
        }))
        .expect("object");
        assert_eq!(
            conditions(&object),
            vec![("Joined".to_string(), "True".to_string()), ("Healthy".to_string(), "Unknown".to_string())]
        );
    }
}
