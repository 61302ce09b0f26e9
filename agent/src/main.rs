//! `fleet-agent`: run the member agent, or `inspect` its embedded cluster.

use clap::Parser;
use fleet_agent::config::{Cli, Command};
use fleet_agent::target::embedded::EmbeddedTarget;
use fleet_agent::target::kubernetes::KubernetesTarget;

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
    if let Some(Command::Inspect(args)) = cli.command {
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
    let config = cli.run.config()?;
    std::fs::create_dir_all(&config.data_dir)?;
    let shutdown = shutdown_signal();
    if let Some(kubeconfig) = config.kubeconfig.clone() {
        let target = KubernetesTarget::connect(Some(&kubeconfig)).await?;
        fleet_agent::run(config, target, shutdown).await?;
    } else {
        let sim = cli.run.sim.to_config()?;
        let target = EmbeddedTarget::open(&config.data_dir.join("embedded"), sim)?;
        fleet_agent::run(config, target, shutdown).await?;
    }
    Ok(())
}

/// SIGTERM or Ctrl-C (the handler is installed before anything else runs).
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(unix)]
        if let Some(mut term) = term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
