//! Flags of `fleet-agent` (docs/reference/interfaces.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// `fleet-agent`: join a Fleet hub and apply its Work to this cluster.
#[derive(Debug, Parser)]
#[command(name = "fleet-agent", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands besides running the agent.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what the embedded target holds (also while the agent runs).
    Inspect(InspectArgs),
    /// Create or update objects on the embedded cluster as someone other
    /// than Fleet (like `kubectl apply`; also while the agent runs).
    Apply(EditApplyArgs),
    /// Change an object on the embedded cluster with a JSON merge patch
    /// (like `kubectl patch --type merge`; also while the agent runs).
    Patch(EditPatchArgs),
    /// Delete an object from the embedded cluster (like `kubectl delete`;
    /// also while the agent runs).
    Delete(EditDeleteArgs),
}

/// What every out-of-band edit needs.
#[derive(Debug, Args)]
pub struct EditTarget {
    /// The agent's data dir.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// How long to wait for a running agent to make the edit.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "10s")]
    pub timeout: Duration,
}

/// `fleet-agent apply`.
#[derive(Debug, Args)]
pub struct EditApplyArgs {
    #[command(flatten)]
    pub target: EditTarget,
    /// A YAML or JSON file of one or more documents, or `-` for stdin.
    #[arg(short = 'f', long = "filename")]
    pub file: String,
}

/// `KIND NAME [-n NS]`: one object of the embedded cluster.
#[derive(Debug, Args)]
pub struct ObjectArgs {
    /// Kind (any name fleetctl accepts, or a custom resource's names).
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// Namespace (default: `default`, for namespaced kinds).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

/// `fleet-agent patch`.
#[derive(Debug, Args)]
pub struct EditPatchArgs {
    #[command(flatten)]
    pub target: EditTarget,
    #[command(flatten)]
    pub object: ObjectArgs,
    /// The JSON merge patch, e.g. '{"data":{"key":"value"}}' (null removes a field).
    #[arg(short = 'p', long)]
    pub patch: String,
}

/// `fleet-agent delete`.
#[derive(Debug, Args)]
pub struct EditDeleteArgs {
    #[command(flatten)]
    pub target: EditTarget,
    #[command(flatten)]
    pub object: ObjectArgs,
}

/// Running the agent.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// This member cluster's name.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Hub endpoints, host:port[,host:port...]; any node will do.
    #[arg(long, value_delimiter = ',')]
    pub hub: Vec<String>,
    /// The agent's state: identity (tls/), what it applied, the embedded cluster.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Bootstrap token (first start only).
    #[arg(long)]
    pub token: Option<String>,
    /// The fleet CA certificate to trust when joining.
    #[arg(long, conflicts_with = "ca_fingerprint")]
    pub ca_file: Option<PathBuf>,
    /// The fleet CA's fingerprint (sha256:HEX, as `fleetctl token create` prints).
    #[arg(long)]
    pub ca_fingerprint: Option<String>,
    /// Apply to a real Kubernetes cluster with this kubeconfig.
    #[arg(long, conflicts_with = "embedded")]
    pub kubeconfig: Option<PathBuf>,
    /// Apply to the Kubernetes cluster this agent runs in, as a pod, with
    /// its service account: the API server from KUBERNETES_SERVICE_HOST and
    /// KUBERNETES_SERVICE_PORT, the token and CA Kubernetes mounts under
    /// /var/run/secrets/kubernetes.io/serviceaccount/ (the token file is
    /// re-read as the kubelet rotates it). Without this flag or
    /// --kubeconfig the target is the embedded cluster.
    #[arg(long, conflicts_with_all = ["kubeconfig", "embedded"])]
    pub in_cluster: bool,
    /// Apply to the embedded simulated cluster (the default).
    #[arg(long)]
    pub embedded: bool,
    /// How often every Work is checked for drift on the cluster (and
    /// ReportDiff results refreshed), besides whenever it changes. Default:
    /// 15s on the embedded cluster; 5m on a Kubernetes cluster, whose
    /// placed kinds the agent watches (a change there is checked at once).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub drift_check_interval: Option<Duration>,
    /// Report the cluster's namespaces with each heartbeat (at most 200, those
    /// Fleet placed first), so ResourcePlacements are scheduled only onto
    /// clusters where their namespace exists (KubeFleet's namespace
    /// affinity). Off by default, as KubeFleet's namespace collection is:
    /// a cluster that does not report namespaces is not filtered by them.
    #[arg(long)]
    pub collect_namespaces: bool,
    /// The embedded target's size, costs and readiness (`--sim-*`).
    #[command(flatten)]
    pub sim: crate::targets::embedded::SimArgs,
}

/// `fleet-agent inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The agent's data dir.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Kind to show (any name fleetctl accepts); all kinds when omitted.
    pub kind: Option<String>,
    /// One object's name.
    pub name: Option<String>,
    /// Namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// All namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Output format: json; origin (where one object came from: the Work
    /// and the placement that put it there; needs KIND and NAME); a table
    /// when omitted.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
}

/// A validated agent configuration.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub cluster: String,
    pub hub: Vec<String>,
    pub data_dir: PathBuf,
    pub token: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub ca_fingerprint: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    /// Every Work is checked for drift this often; `None`: the target's
    /// default ([`crate::works::DRIFT_CHECK_INTERVAL`], or
    /// [`crate::works::WATCHED_CHECK_INTERVAL`] for a target that watches).
    pub drift_check_interval: Option<Duration>,
    /// Whether heartbeats carry the cluster's namespaces (`--collect-namespaces`).
    pub collect_namespaces: bool,
}

impl RunArgs {
    /// Validates the flags needed to run.
    pub fn config(&self) -> Result<AgentConfig, crate::AgentError> {
        let missing = |flag: &str| crate::AgentError::Config(format!("{flag} is required to run the agent"));
        let cluster = self.cluster.clone().ok_or_else(|| missing("--cluster"))?;
        let data_dir = self.data_dir.clone().ok_or_else(|| missing("--data-dir"))?;
        let hub: Vec<String> = self.hub.iter().map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).collect();
        if hub.is_empty() {
            return Err(missing("--hub"));
        }
        if let Some(fp) = &self.ca_fingerprint {
            if !fp.starts_with("sha256:") || fp.len() != 71 {
                return Err(crate::AgentError::Config(format!(
                    "--ca-fingerprint: Invalid value: {fp:?}: expected sha256: followed by 64 hex digits"
                )));
            }
        }
        let drift_check_interval = self.drift_check_interval;
        if drift_check_interval.is_some_and(|d| d.is_zero()) {
            return Err(crate::AgentError::Config(
                "--drift-check-interval: Invalid value: \"0s\": must be more than zero (e.g. 15s)".to_string(),
            ));
        }
        Ok(AgentConfig {
            cluster,
            hub,
            data_dir,
            token: self.token.clone(),
            ca_file: self.ca_file.clone(),
            ca_fingerprint: self.ca_fingerprint.clone(),
            kubeconfig: self.kubeconfig.clone(),
            drift_check_interval,
            collect_namespaces: self.collect_namespaces,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_cluster_excludes_the_other_targets() {
        let run = |args: &[&str]| Cli::try_parse_from([&["fleet-agent"], args].concat());
        let cli = run(&["--cluster", "m", "--hub", "h:1", "--data-dir", "d", "--in-cluster"]).unwrap();
        assert!(cli.run.in_cluster && cli.run.kubeconfig.is_none() && !cli.run.embedded);
        for other in [&["--kubeconfig", "k"][..], &["--embedded"][..]] {
            let e = run(&[&["--in-cluster"][..], other].concat()).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{e}");
        }
    }
}
