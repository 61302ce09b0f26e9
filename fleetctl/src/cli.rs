//! The command line, as clap parses it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::output::OutputFormat;

/// fleetctl controls a Fleet hub: place resources on member clusters.
#[derive(Debug, Parser)]
#[command(name = "fleetctl", version, about, propagate_version = true)]
pub struct Cli {
    /// Hub nodes to talk to, host:port[,host:port...]; the next is tried when one is down.
    #[arg(long, global = true, env = "FLEET_ENDPOINTS", value_name = "HOST:PORT,...")]
    pub endpoints: Option<String>,

    /// Directory holding ca.pem, <user>.pem and <user>-key.pem.
    #[arg(long, global = true, env = "FLEET_TLS_DIR", value_name = "PKI")]
    pub tls_dir: Option<PathBuf>,

    /// Which client certificate of the TLS directory to use (admin, viewer, ...).
    #[arg(long, global = true, env = "FLEET_USER", default_value = "admin", value_name = "NAME")]
    pub user: String,

    /// How long one node may take to answer before the next is tried (e.g. 30s, 2m).
    #[arg(long, global = true, default_value = "30s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update objects from YAML or JSON manifests (all in one atomic request).
    Apply(ApplyArgs),
    /// Show objects as a table, JSON, YAML or names; -w to watch changes.
    Get(GetArgs),
    /// Show one object in detail, with its events.
    Describe(DescribeArgs),
    /// Delete objects by kind and name, or those in manifests.
    Delete(DeleteArgs),
    /// Inspect and change the hub's node membership.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Make the fleet's certificates.
    #[command(subcommand)]
    Pki(PkiCommand),
    /// Bootstrap tokens for joining member clusters.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Backups of the whole hub.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Follow the rollout of a placement.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// Approve a ClusterApprovalRequest (or, with -n, an ApprovalRequest) of a staged update run.
    Approve(ApproveArgs),
    /// Cordon a member cluster (NoSchedule taint) and evict every ClusterResourcePlacement from it,
    /// within their disruption budgets; exits non-zero if some placement could not be evicted.
    Drain(DrainArgs),
    /// Remove the taint `drain` added, so placements may choose the cluster again.
    Uncordon(UncordonArgs),
    /// Print the objects one member cluster receives from a placement, as the
    /// hub rendered them for it (overrides applied, envelopes unwrapped).
    Render(RenderArgs),
    /// Tell where an object on a member cluster came from: each Work on the
    /// hub that holds it, the cluster it is for, the placement that rendered
    /// it (or the envelope it was unwrapped from), and whether the member
    /// reported it applied.
    Origin(OriginArgs),
    /// Print a kubeconfig for kubectl: one context per hub node serving the
    /// Kubernetes-compatible API (--kube-listen), with the CA and the
    /// certificate of --user (admin or viewer).
    Kubeconfig,
    /// Schedule a placement from a file against the hub's current member
    /// clusters without writing anything: the clusters it would choose with
    /// their scores, and why each other cluster was left out. A placement
    /// that exists is planned with its bindings or decisions, as the hub
    /// would reschedule it (PickN keeps its clusters while the policy is
    /// unchanged).
    Plan(PlanArgs),
    /// Make objects from manifest files.
    #[command(subcommand)]
    Create(CreateCommand),
    /// Print fleetctl's version and each hub node's.
    Version(VersionArgs),
    /// Print a shell completion script (e.g. `source <(fleetctl completion bash)`).
    Completion(CompletionArgs),
}

/// `create`.
#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Deliver the manifests of files the OCM way, as `clusteradm create
    /// work` does: a ManifestWork NAME in the namespace of each of
    /// --clusters, or a ManifestWorkReplicaSet NAME for --placement (every
    /// cluster it decides). Applying again updates them.
    Work(CreateWorkArgs),
}

/// `create work`.
#[derive(Debug, Args)]
pub struct CreateWorkArgs {
    /// The ManifestWork's (or ManifestWorkReplicaSet's) name.
    pub name: String,
    /// A manifest file, a directory of *.yaml/*.yml/*.json files, or - for stdin (repeatable).
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE|DIR|-")]
    pub files: Vec<String>,
    /// The member clusters to get a ManifestWork, comma-separated.
    #[arg(long, value_delimiter = ',', required_unless_present = "placement", conflicts_with = "placement")]
    pub clusters: Vec<String>,
    /// The OCM Placement, NAMESPACE/NAME or NAME (in -n): a ManifestWorkReplicaSet
    /// in its namespace keeps one ManifestWork on each cluster it decides.
    #[arg(long, value_name = "[NAMESPACE/]NAME")]
    pub placement: Option<String>,
    /// The namespace of the Placement and the ManifestWorkReplicaSet (default: `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

/// `plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A manifest holding one placement (ClusterResourcePlacement,
    /// ResourcePlacement or OCM Placement), or - for stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE|-")]
    pub file: String,
    /// Output format (default: a table per placement).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<ClusterFormat>,
}

/// `version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Only the client's version (no hub needed).
    #[arg(long)]
    pub client: bool,
    /// Output format (default: text).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<ClusterFormat>,
}

/// `completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// Shells `completion` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// `approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The approval request's name, e.g. app-v1-after-canary (`<run>-before|after-<stage>`).
    pub name: String,
    /// The namespace of an ApprovalRequest (a StagedUpdateRun's); without it, a ClusterApprovalRequest.
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// `drain`.
#[derive(Debug, Args)]
pub struct DrainArgs {
    /// The member cluster to drain.
    pub cluster: String,
    /// How long to wait for the evictions to be judged (e.g. 30s, 2m).
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

/// `uncordon`.
#[derive(Debug, Args)]
pub struct UncordonArgs {
    /// The member cluster to uncordon.
    pub cluster: String,
}

/// `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The placement kind: crp (ClusterResourcePlacement) or rp (ResourcePlacement); KIND/NAME also works.
    pub kind: String,
    /// The placement's name.
    pub name: Option<String>,
    /// The member cluster whose copy to print.
    #[arg(long, value_name = "CLUSTER")]
    pub cluster: String,
    /// The namespace of a ResourcePlacement (default: "default").
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// yaml (default: one document per object, each Work named in a comment) or json (a List).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<OutputFormat>,
}

/// `origin`.
#[derive(Debug, Args)]
pub struct OriginArgs {
    /// The object's kind (ConfigMap, cm, deploy, ...); KIND/NAME also works.
    pub kind: String,
    /// The object's name.
    pub name: Option<String>,
    /// The object's namespace (default: "default" for a namespaced kind).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Only this member cluster (default: every cluster).
    #[arg(long, value_name = "CLUSTER")]
    pub cluster: Option<String>,
}

/// `rollout ...`.
#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Show how far a placement's rollout got on each chosen cluster; exits 0
    /// once the placement is Available at its current generation, non-zero
    /// (with what is pending or failed) otherwise.
    Status(RolloutStatusArgs),
}

/// `rollout status`.
#[derive(Debug, Args)]
pub struct RolloutStatusArgs {
    /// The placement kind: crp (ClusterResourcePlacement) or rp (ResourcePlacement); KIND/NAME also works.
    pub kind: String,
    /// The placement's name.
    pub name: Option<String>,
    /// The namespace of a ResourcePlacement (default: "default").
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Watch until the rollout completes (exit 0), fails or times out (exit 1).
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// With -w: how long to wait (e.g. 90s, 10m).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

/// `snapshot`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save a consistent backup of the whole hub to FILE, from a running hub
    /// (no node stops); restore it with `fleet-node restore`.
    Save {
        /// Where to write the backup (written to FILE.part, checked, then renamed).
        file: std::path::PathBuf,
    },
}

/// `token`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a single-use token bound to one cluster name; prints the token,
    /// then the CA fingerprint the agent should pin.
    Create {
        /// The member cluster that may join with it.
        #[arg(long)]
        cluster: String,
        /// How long the token is valid (e.g. 30m, 1h; at most 24h).
        #[arg(long, default_value = "1h", value_parser = parse_ttl)]
        ttl: std::time::Duration,
    },
}

/// A token lifetime: a duration of at least 1s and at most 24h (the hub
/// refuses longer ones too).
/// A user certificate's lifetime: an hour to ten years.
fn parse_user_ttl(text: &str) -> Result<std::time::Duration, String> {
    let ttl = humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?;
    if ttl < std::time::Duration::from_secs(3600) || ttl > std::time::Duration::from_secs(10 * 365 * 24 * 3600) {
        return Err(format!("{text:?}: a user certificate is valid for 1h to 3650d"));
    }
    Ok(ttl)
}

fn parse_ttl(text: &str) -> Result<std::time::Duration, String> {
    let ttl = humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?;
    if ttl < std::time::Duration::from_secs(1) || ttl > std::time::Duration::from_secs(24 * 3600) {
        return Err(format!("{text:?}: a bootstrap token lives at least 1s and at most 24h"));
    }
    Ok(ttl)
}

/// `apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// A manifest file, a directory of *.yaml/*.yml/*.json files, or - for stdin (repeatable).
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE|DIR|-")]
    pub files: Vec<String>,
}

/// `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The kind: Kind, plural or short name (e.g. crp, mc, cm); KIND/NAME also works.
    pub kind: String,
    /// One object's name.
    pub name: Option<String>,
    /// The namespace (default: "default" for namespaced kinds).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Only objects whose labels match (e.g. app=web,tier!=db).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<OutputFormat>,
    /// A linearizable read through the leader.
    #[arg(long)]
    pub consistent: bool,
    /// After listing, print changes as they happen until interrupted.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// OCM Placements only: each with its decision groups and their
    /// clusters as a tree (as `clusteradm get placements`).
    #[arg(long, conflicts_with_all = ["output", "watch"])]
    pub tree: bool,
}

/// `describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The kind (KIND/NAME also works).
    pub kind: String,
    /// The object's name.
    pub name: Option<String>,
    /// The namespace (default: "default" for namespaced kinds).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// A linearizable read through the leader.
    #[arg(long)]
    pub consistent: bool,
}

/// `delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The kind (KIND/NAME also works).
    pub kind: Option<String>,
    /// The object's name.
    pub name: Option<String>,
    /// The namespace (default: "default" for namespaced kinds).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Delete the objects of these manifests instead (repeatable; DIR and - work as for apply).
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-", conflicts_with_all = ["kind", "name"])]
    pub files: Vec<String>,
    /// Treat "not found" as success.
    #[arg(long)]
    pub ignore_not_found: bool,
}

/// `cluster ...`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Show the hub's members, the leader and the term.
    Status(ClusterOutput),
    /// Add a node (give it a certificate first: pki issue-node).
    AddNode {
        /// The new node's id.
        #[arg(long)]
        id: u64,
        /// Its address, host:port.
        #[arg(long, value_name = "HOST:PORT")]
        address: String,
        /// Output format.
        #[command(flatten)]
        output: ClusterOutput,
    },
    /// Remove a node.
    RemoveNode {
        /// The node's id.
        #[arg(long)]
        id: u64,
        /// Output format.
        #[command(flatten)]
        output: ClusterOutput,
    },
}

/// `-o` of the cluster commands.
#[derive(Debug, Args)]
pub struct ClusterOutput {
    /// Output format (default: a table).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<ClusterFormat>,
}

/// The one alternative to a command's table or text: JSON (`cluster status`,
/// `plan`, `version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClusterFormat {
    /// One JSON object (`cluster status`: `{"leader", "term", "members": [...]}`).
    Json,
}

/// `pki ...`.
#[derive(Debug, Subcommand)]
pub enum PkiCommand {
    /// Make a new CA with node, admin and viewer certificates.
    Init {
        /// Where to write the files.
        #[arg(long, value_name = "PKI")]
        dir: PathBuf,
        /// Where the root CA's key is (ca-key.pem): a directory kept off
        /// the nodes. Default: root/ in the PKI directory.
        #[arg(long, value_name = "DIR")]
        root_dir: Option<PathBuf>,
        /// How many node certificates (node-1 .. node-N).
        #[arg(long, default_value_t = 3)]
        nodes: u64,
        /// Extra names in node certificates: IP addresses or DNS names, comma-separated.
        #[arg(long, default_value = "127.0.0.1,localhost", value_name = "HOST,...")]
        hosts: String,
        /// Replace an existing PKI.
        #[arg(long)]
        force: bool,
    },
    /// Sign a certificate for one more node with the existing CA.
    IssueNode {
        /// The PKI directory.
        #[arg(long, value_name = "PKI")]
        dir: PathBuf,
        /// Where the root CA's key is (ca-key.pem): a directory kept off
        /// the nodes. Default: root/ in the PKI directory.
        #[arg(long, value_name = "DIR")]
        root_dir: Option<PathBuf>,
        /// The node id.
        #[arg(long)]
        id: u64,
        /// Extra names: IP addresses or DNS names, comma-separated.
        #[arg(long, default_value = "127.0.0.1,localhost", value_name = "HOST,...")]
        hosts: String,
        /// Replace existing files.
        #[arg(long)]
        force: bool,
    },
    /// Replace the member CA (the intermediate on the nodes that signs
    /// member certificates) with a new one signed by the root, for a PKI
    /// made before the member CA was constrained or split from the root.
    IssueMemberCa {
        /// The PKI directory.
        #[arg(long, value_name = "PKI")]
        dir: PathBuf,
        /// Where the root CA's key is (ca-key.pem): a directory kept off
        /// the nodes. Default: root/ in the PKI directory.
        #[arg(long, value_name = "DIR")]
        root_dir: Option<PathBuf>,
    },
    /// Sign a certificate for a user: subject CN the user name, one subject
    /// O per group (how Kubernetes reads users from certificates). What the
    /// user may do is what RBAC bindings to it or its groups grant.
    IssueUser {
        /// The PKI directory.
        #[arg(long, value_name = "PKI")]
        dir: PathBuf,
        /// Where the root CA's key is (ca-key.pem): a directory kept off
        /// the nodes. Default: root/ in the PKI directory.
        #[arg(long, value_name = "DIR")]
        root_dir: Option<PathBuf>,
        /// The user name, also the file name (<NAME>.pem, <NAME>-key.pem).
        #[arg(long)]
        name: String,
        /// A group of the user (repeat for several).
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
        /// How long the certificate is valid.
        #[arg(long, default_value = "90d", value_parser = parse_user_ttl, value_name = "DURATION")]
        ttl: std::time::Duration,
        /// Replace existing files.
        #[arg(long)]
        force: bool,
    },
    /// Sign a client certificate with any subject CN.
    IssueClient {
        /// The PKI directory.
        #[arg(long, value_name = "PKI")]
        dir: PathBuf,
        /// Where the root CA's key is (ca-key.pem): a directory kept off
        /// the nodes. Default: root/ in the PKI directory.
        #[arg(long, value_name = "DIR")]
        root_dir: Option<PathBuf>,
        /// The CN, also the file name (<NAME>.pem, <NAME>-key.pem).
        #[arg(long)]
        name: String,
        /// Replace existing files.
        #[arg(long)]
        force: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_contract_examples() {
        let cli = Cli::try_parse_from([
            "fleetctl",
            "--endpoints",
            "a:1,b:2",
            "get",
            "crp",
            "web",
            "-o",
            "json",
            "--consistent",
        ])
        .unwrap();
        assert_eq!(cli.endpoints.as_deref(), Some("a:1,b:2"));
        assert_eq!(cli.user, "admin");
        match cli.command {
            Command::Get(g) => {
                assert_eq!((g.kind.as_str(), g.name.as_deref()), ("crp", Some("web")));
                assert_eq!(g.output, Some(OutputFormat::Json));
                assert!(g.consistent);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["fleetctl", "apply", "-f", "a.yaml", "-f", "dir", "--user", "viewer"]).unwrap();
        assert_eq!(cli.user, "viewer");
        assert!(matches!(cli.command, Command::Apply(a) if a.files == ["a.yaml", "dir"]));
        assert!(Cli::try_parse_from(["fleetctl", "get", "cm", "-n", "x", "-A"]).is_err());
        assert!(Cli::try_parse_from(["fleetctl", "delete", "cm", "x", "-f", "a.yaml"]).is_err());
        assert!(Cli::try_parse_from(["fleetctl", "token", "create", "--cluster", "a", "--ttl", "24h"]).is_ok());
        for ttl in ["25h", "0s", "1000000000000d"] {
            let err = Cli::try_parse_from(["fleetctl", "token", "create", "--cluster", "a", "--ttl", ttl]).unwrap_err();
            assert!(err.to_string().contains(ttl), "{err}");
        }
        let cli = Cli::try_parse_from(["fleetctl", "cluster", "status", "-o", "json"]).unwrap();
        assert!(matches!(cli.command, Command::Cluster(ClusterCommand::Status(ClusterOutput { output: Some(_) }))));
        let cli =
            Cli::try_parse_from(["fleetctl", "rollout", "status", "rp", "app", "-n", "ns", "-w", "--timeout", "90s"])
                .unwrap();
        match cli.command {
            Command::Rollout(RolloutCommand::Status(r)) => {
                assert_eq!(
                    (r.kind.as_str(), r.name.as_deref(), r.namespace.as_deref()),
                    ("rp", Some("app"), Some("ns"))
                );
                assert!(r.watch);
                assert_eq!(r.timeout, Duration::from_secs(90));
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["fleetctl", "rollout", "status", "crp/web"]).unwrap();
        assert!(
            matches!(cli.command, Command::Rollout(RolloutCommand::Status(r)) if !r.watch && r.timeout == Duration::from_secs(600))
        );
        let cli = Cli::try_parse_from(["fleetctl", "approve", "app-v1-after-canary"]).unwrap();
        assert!(matches!(cli.command, Command::Approve(a) if a.name == "app-v1-after-canary" && a.namespace.is_none()));
        let cli = Cli::try_parse_from(["fleetctl", "approve", "r-before-prod", "-n", "team"]).unwrap();
        assert!(matches!(cli.command, Command::Approve(a) if a.namespace.as_deref() == Some("team")));
        let cli = Cli::try_parse_from(["fleetctl", "drain", "b"]).unwrap();
        assert!(matches!(cli.command, Command::Drain(d) if d.cluster == "b" && d.timeout == Duration::from_secs(120)));
        let cli = Cli::try_parse_from(["fleetctl", "uncordon", "b"]).unwrap();
        assert!(matches!(cli.command, Command::Uncordon(u) if u.cluster == "b"));
        let cli = Cli::try_parse_from(["fleetctl", "completion", "zsh"]).unwrap();
        assert!(matches!(cli.command, Command::Completion(c) if c.shell == CompletionShell::Zsh));
        assert!(Cli::try_parse_from(["fleetctl", "completion", "tcsh"]).is_err());
        let cli = Cli::try_parse_from(["fleetctl", "version", "--client"]).unwrap();
        assert!(matches!(cli.command, Command::Version(v) if v.client));
        let cli = Cli::try_parse_from(["fleetctl", "plan", "-f", "crp.yaml", "-o", "json"]).unwrap();
        assert!(matches!(cli.command, Command::Plan(p) if p.file == "crp.yaml" && p.output.is_some()));
        let cli = Cli::try_parse_from(["fleetctl", "pki", "init", "--dir", "p"]).unwrap();
        assert!(matches!(cli.command, Command::Pki(PkiCommand::Init { nodes: 3, .. })));
    }
}
