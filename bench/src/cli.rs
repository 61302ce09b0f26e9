//! Command-line flags of `fleet-bench`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `fleet-bench`: whole-system load against a Fleet hub or etcd.
#[derive(Debug, Parser)]
#[command(
    name = "fleet-bench",
    version,
    about = "Write-throughput benchmark for the Fleet hub (and etcd, for comparison)"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write objects of a fixed size with N concurrent clients for S seconds;
    /// print throughput and latency percentiles.
    Put(PutArgs),
    /// Write one object through each endpoint; exit 0 when every write
    /// succeeded (scripts poll this to know a cluster is ready).
    Probe(ConnectArgs),
    /// Time from applying a Work to its `Available` condition, on one member.
    WorkLatency(WorkLatencyArgs),
    /// Time from applying a ClusterResourcePlacement to its `Scheduled`
    /// condition for that generation, one placement after another.
    PlacementLatency(PlacementLatencyArgs),
    /// Time from applying a PickAll ClusterResourcePlacement (phase A) or a
    /// change of its selected ConfigMap (phase B) until every cluster has the
    /// latest resources applied and available.
    RolloutLatency(RolloutLatencyArgs),
    /// Time staged update runs over every member cluster, from their Apply to
    /// Succeeded, split into the hub's controllers and the agents.
    StagedLatency(StagedLatencyArgs),
    /// Simulated member clusters in this process, joined and applying their
    /// Work until SIGINT/SIGTERM (prints `ready N` once all joined).
    Members(MembersArgs),
    /// A scale scenario (new placements, rollouts, idle fleet, memory,
    /// restarts and leader loss) against a hub with simulated members.
    Scale(ScaleArgs),
    /// The Kubernetes-compatible API next to gRPC on one node: list
    /// throughput and latency, and watch fan-out while placements change.
    KubeCompare(KubeCompareArgs),
    /// What authorization costs end to end: the same write and list load as
    /// admin and as a tenant bound by RBAC, in one run, with the ratio.
    RbacCost(RbacCostArgs),
    /// Where the time of one write goes: one write at a time through the
    /// leader, then through a follower, with every node's per-stage
    /// timings from /metrics.
    Breakdown(BreakdownArgs),
}

/// Flags of `fleet-bench breakdown`.
#[derive(Debug, Clone, Args)]
pub struct BreakdownArgs {
    /// Every hub node's gRPC address, `host:port[,host:port...]`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// Every hub node's --http-listen address, in the order of --endpoints.
    #[arg(long, value_delimiter = ',', required = true)]
    pub metrics: Vec<String>,
    /// PKI dir with ca.pem, admin.pem and admin-key.pem.
    #[arg(long, env = "FLEET_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Measured writes through each node.
    #[arg(long, default_value_t = 2000)]
    pub writes: u64,
    /// Unmeasured writes before them.
    #[arg(long, default_value_t = 200)]
    pub warmup: u64,
    /// Bytes of each ConfigMap's value.
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,
}

/// Flags of `fleet-bench rbac-cost`.
#[derive(Debug, Clone, Args)]
pub struct RbacCostArgs {
    /// Every hub node, `host:port[,host:port...]`; clients are spread over all of them.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// PKI dir with ca.pem, admin.pem, admin-key.pem and the tenant's
    /// `<user>.pem` and `<user>-key.pem` (`fleetctl pki issue-user`).
    #[arg(long, env = "FLEET_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// The tenant: bound to the `edit` ClusterRole in namespace `bench`.
    #[arg(long, default_value = "fleet-bench-tenant")]
    pub user: String,
    /// RoleBindings of other users beside the tenant's, so the policy is not trivial.
    #[arg(long, default_value_t = 200)]
    pub other_bindings: usize,
    /// Concurrent clients, each with one request in flight (keep it at or
    /// below the hub's --max-requests-per-user).
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seconds each of the four measurements runs.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Unmeasured load before each measurement.
    #[arg(long, default_value_t = 1)]
    pub warmup_seconds: u64,
    /// Bytes of each ConfigMap's value.
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,
    /// Distinct ConfigMaps each client writes (the lists return all of them).
    #[arg(long, default_value_t = 25)]
    pub keys_per_client: u64,
    /// Rounds of the four measurements, alternating whether admin or the
    /// tenant goes first; the report sums them.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
}

/// Flags of `fleet-bench kube-compare`.
#[derive(Debug, Clone, Args)]
pub struct KubeCompareArgs {
    /// The node's gRPC address (the first of the list is used).
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// The same node's --kube-listen address.
    #[arg(long)]
    pub kube: String,
    /// PKI dir with ca.pem, admin.pem and admin-key.pem.
    #[arg(long, env = "FLEET_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Placements the lists return.
    #[arg(long, default_value_t = 20)]
    pub placements: usize,
    /// Concurrent list clients.
    #[arg(long, default_value_t = 8)]
    pub list_clients: usize,
    /// Seconds each list measurement runs.
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// Concurrent watchers, each on its own connection.
    #[arg(long, default_value_t = 200)]
    pub watchers: usize,
    /// Changes every watcher must see.
    #[arg(long, default_value_t = 50)]
    pub changes: usize,
}

/// The system under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// A Fleet hub: `Fleet.Apply` of ConfigMaps over mutual TLS.
    Fleet,
    /// etcd v3: `etcdserverpb.KV/Put` over plaintext gRPC (mutual TLS with `--etcd-tls`).
    Etcd,
}

impl Target {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Target::Fleet => "fleet",
            Target::Etcd => "etcd",
        }
    }
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A few lines for people.
    Text,
    /// One JSON object on one line, for scripts.
    Json,
}

/// Where to send requests and how to connect.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The system under test.
    #[arg(long, value_enum, default_value = "fleet")]
    pub target: Target,
    /// Every member, `host:port[,host:port...]`; connections are spread over all of them.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// PKI dir with ca.pem, admin.pem and admin-key.pem (fleet, and etcd with `--etcd-tls`).
    #[arg(long, env = "FLEET_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Dial etcd over mutual TLS with the identity in `--tls-dir`, for a
    /// comparison where both systems pay for encryption (etcd otherwise
    /// runs plaintext; the hub always uses mutual TLS).
    #[arg(long)]
    pub etcd_tls: bool,
    /// HTTP/2 connections to open, round-robin over the endpoints
    /// (0 = one per endpoint). Clients share them round-robin.
    #[arg(long, default_value_t = 0)]
    pub connections: usize,
    /// Per-request deadline in seconds.
    #[arg(long, default_value_t = 10)]
    pub request_timeout_seconds: u64,
}

/// Flags of `fleet-bench put`.
#[derive(Debug, Clone, Args)]
pub struct PutArgs {
    /// Endpoints and transport.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Concurrent clients, each with one request in flight at a time.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Measured duration.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Unmeasured load before the measurement starts.
    #[arg(long, default_value_t = 1)]
    pub warmup_seconds: u64,
    /// Bytes of each value (`data.v` of the ConfigMap; the etcd value).
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,
    /// Distinct keys each client cycles over.
    #[arg(long, default_value_t = 1000)]
    pub keys_per_client: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: OutputFormat,
}

/// `work-latency`.
#[derive(Debug, Args)]
pub struct WorkLatencyArgs {
    /// Endpoints and transport (only the first endpoint is used).
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The member cluster whose namespace receives the Works.
    #[arg(long)]
    pub cluster: String,
    /// How many Works to time, one after another.
    #[arg(long, default_value_t = 20)]
    pub count: usize,
    /// Include a Deployment (then the simulated ready delay counts too).
    #[arg(long)]
    pub deployment: bool,
}

/// Flags of `fleet-bench placement-latency`.
#[derive(Debug, Args)]
pub struct PlacementLatencyArgs {
    /// Endpoints and transport (only the first endpoint is used).
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// How many placements to time, one after another.
    #[arg(long, default_value_t = 50)]
    pub count: usize,
    /// `numberOfClusters` of each (PickN) placement.
    #[arg(long, default_value_t = 3)]
    pub clusters: u32,
    /// The Namespace the placements select; applied first (and deleted at the
    /// end if this run created it).
    #[arg(long, default_value = "fleet-bench")]
    pub namespace: String,
    /// Keep the placements (and the namespace) instead of deleting them.
    #[arg(long)]
    pub keep: bool,
    /// How long one placement may take to be scheduled before the run fails.
    #[arg(long, default_value_t = 60)]
    pub timeout_seconds: u64,
}

/// Flags of `fleet-bench rollout-latency`.
#[derive(Debug, Args)]
pub struct RolloutLatencyArgs {
    /// Endpoints and transport (only the first endpoint is used).
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// How many clusters must report the resources available (the number of
    /// joined members: the placements pick all of them).
    #[arg(long)]
    pub clusters: usize,
    /// Repetitions of each phase.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// The Namespace (holding one ConfigMap) the placements select; applied
    /// first and deleted at the end if this run created it. Not `default`,
    /// `kube-*` or `fleet-*`: the hub never places those.
    #[arg(long, default_value = "bench-rollout")]
    pub namespace: String,
    /// How long one rollout (or one cleanup) may take before the run fails.
    #[arg(long, default_value_t = 300)]
    pub timeout_seconds: u64,
}

/// Flags of `fleet-bench staged-latency`.
#[derive(Debug, Args)]
pub struct StagedLatencyArgs {
    /// Endpoints and transport (only the first endpoint is used).
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// How many clusters the runs update (the joined members, all labelled
    /// with one of the stage values).
    #[arg(long)]
    pub clusters: usize,
    /// The cluster label the stages select on.
    #[arg(long, default_value = "region")]
    pub stage_label: String,
    /// One stage per value, in this order (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "east,west,central")]
    pub stage_values: Vec<String>,
    /// Every stage's maxConcurrency: a count or a percentage.
    #[arg(long, default_value = "100%")]
    pub max_concurrency: String,
    /// How many runs (each over a new resource snapshot).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// The Namespace (holding one ConfigMap) the placement selects; deleted at the end.
    #[arg(long, default_value = "bench-staged")]
    pub namespace: String,
    /// How long one run may take before the benchmark fails.
    #[arg(long, default_value_t = 300)]
    pub timeout_seconds: u64,
}

/// Flags of `fleet-bench members` (docs/reference/interfaces.md).
#[derive(Debug, Clone, Args)]
pub struct MembersArgs {
    /// Hub endpoints, `host:port[,host:port...]`; members spread their connections over them.
    #[arg(long, value_delimiter = ',', required = true)]
    pub hub: Vec<String>,
    /// PKI dir with ca.pem, admin.pem and admin-key.pem.
    #[arg(long, env = "FLEET_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// How many member clusters to simulate.
    #[arg(long)]
    pub count: usize,
    /// Name prefix: members are `<prefix>0001`...
    #[arg(long, default_value = "sim-")]
    pub prefix: String,
    /// Labels of every MemberCluster, `k=v,...`.
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// `spec.heartbeatPeriodSeconds` of every MemberCluster (the hub's default when omitted).
    #[arg(long)]
    pub heartbeat_seconds: Option<u64>,
    /// Also label member i `region=region-<i mod R>` (0: no region label).
    #[arg(long, default_value_t = 0)]
    pub regions: usize,
    /// Where the members keep their identities and ledgers (a temporary
    /// dir, removed at exit, when omitted).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Make every Deployment's status change this often (its `Available`
    /// condition's update time), as for measuring status back-reporting.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub status_churn: Option<Duration>,
    /// The agents' `--drift-check-interval` (how often every Work is looked
    /// at again; the agent's default when omitted).
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub drift_check_interval: Option<Duration>,
}

/// The scenarios of `fleet-bench scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// A new PickN(--pick) placement → Available on each chosen cluster.
    PickN,
    /// A new PickAll placement → Available on every cluster.
    PickAll,
    /// A resource change on every cluster under `maxUnavailable: 25%`.
    Rollout,
    /// --placements PickN(--placement-clusters) placements, left in place.
    Placements,
    /// Removes what `placements` left.
    Cleanup,
    /// Raft entries per second and the leader's CPU while nothing happens.
    Idle,
    /// Resident memory of the processes in --pids.
    Rss,
    /// Runs --disrupt-cmd, then times the first write and the controllers' resync.
    Disrupt,
}

impl Scenario {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::PickN => "pick-n",
            Scenario::PickAll => "pick-all",
            Scenario::Rollout => "rollout",
            Scenario::Placements => "placements",
            Scenario::Cleanup => "cleanup",
            Scenario::Idle => "idle",
            Scenario::Rss => "rss",
            Scenario::Disrupt => "disrupt",
        }
    }
}

/// Flags of `fleet-bench scale`.
#[derive(Debug, Clone, Args)]
pub struct ScaleArgs {
    /// Endpoints and transport (the first endpoint is used; `disrupt` tries all).
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Which scenario.
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// How many member clusters are joined (PickAll waits for all of them).
    #[arg(long, default_value_t = 1000)]
    pub clusters: usize,
    /// `numberOfClusters` of the `pick-n` placement.
    #[arg(long, default_value_t = 100)]
    pub pick: u32,
    /// How many times to run the scenario.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Placements of the `placements` scenario.
    #[arg(long, default_value_t = 1000)]
    pub placements: usize,
    /// `numberOfClusters` of each of those placements.
    #[arg(long, default_value_t = 3)]
    pub placement_clusters: u32,
    /// The `idle` window.
    #[arg(long, default_value_t = 20)]
    pub idle_seconds: u64,
    /// `NAME=PID,...` of processes to measure (`idle`: node ids, for the
    /// leader's CPU; `rss`: any names; `pick-n`, `pick-all`, `rollout`,
    /// `placements`: the cores each used over the run).
    #[arg(long, value_delimiter = ',')]
    pub pids: Vec<String>,
    /// The `disrupt` command, run with `sh -c` (`{leader}` = the leader's id).
    #[arg(long)]
    pub disrupt_cmd: Option<String>,
    /// Run with `sh -c` after each `disrupt` run, untimed (e.g. restart a killed node).
    #[arg(long)]
    pub recover_cmd: Option<String>,
    /// How long one wait may take before the run fails.
    #[arg(long, default_value_t = 300)]
    pub timeout_seconds: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: OutputFormat,
}
