//! `fleet-agent`: run the member agent, `inspect` its embedded cluster, or
//! edit that cluster out of band (`apply`, `patch`, `delete`).

use clap::Parser;
use fleet_agent::config::{Cli, Command};
use fleet_agent::edits::{self, lock::StoreLock};
use fleet_agent::targets::embedded::{EmbeddedTarget, STORE_DIR};
use fleet_agent::targets::kubernetes::KubernetesTarget;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Inspect(args)) if args.output.as_deref() == Some("origin") => {
            let (kind, name, namespace) = (args.kind.as_deref(), args.name.as_deref(), args.namespace.as_deref());
            print!("{}", fleet_agent::inspect::origin(&args.data_dir, kind, name, namespace)?);
            return Ok(());
        }
        Some(Command::Inspect(args)) => {
            let text = fleet_agent::inspect::inspect(
                &args.data_dir,
                args.kind.as_deref(),
                args.name.as_deref(),
                args.namespace.as_deref(),
                args.all_namespaces,
                args.output.as_deref() == Some("json"),
            )?;
            print!("{text}");
            return Ok(());
        }
        Some(Command::Apply(args)) => return Ok(edits::apply_command(args)?),
        Some(Command::Patch(args)) => return Ok(edits::patch_command(args)?),
        Some(Command::Delete(args)) => return Ok(edits::delete_command(args)?),
        None => {}
    }
    let config = cli.run.config()?;
    std::fs::create_dir_all(&config.data_dir)?;
    let shutdown = fleet_proto::signal::shutdown_signal();
    if let Some(kubeconfig) = config.kubeconfig.clone() {
        let target = KubernetesTarget::connect(Some(&kubeconfig)).await?;
        fleet_agent::run(config, target, shutdown).await?;
    } else if cli.run.in_cluster {
        // Only the pod's own service account, never a kubeconfig found in
        // the image or $KUBECONFIG (as kube's `Config::infer` would prefer):
        // the flag says which credentials the agent acts with.
        let config_in_pod = kube::Config::incluster().map_err(|e| {
            anyhow::anyhow!(
                "--in-cluster: not running in a Kubernetes pod with a service account \
                 (KUBERNETES_SERVICE_HOST/PORT and /var/run/secrets/kubernetes.io/serviceaccount/): {e}"
            )
        })?;
        let target = KubernetesTarget::from_config(config_in_pod)?;
        fleet_agent::run(config, target, shutdown).await?;
    } else {
        let sim = cli.run.sim.to_config()?;
        let store = config.data_dir.join(STORE_DIR);
        // Held for the agent's life: out-of-band edits then go through the inbox.
        let _lock = StoreLock::acquire(&store, edits::LOCK_WAIT).await?;
        let target = EmbeddedTarget::open(&store, sim)?;
        let inbox = edits::inbox::serve(target.clone());
        tokio::select! {
            r = fleet_agent::run(config, target, shutdown) => r?,
            r = inbox => r?,
        }
    }
    Ok(())
}
