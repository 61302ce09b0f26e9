//! `fleet-node`: one member of the hub trio (or five).

use clap::Parser;

/// mimalloc instead of glibc malloc: under write load the hub allocates per
/// request (JSON, MessagePack, objects), and glibc's malloc/free was about a
/// quarter of CPU samples in a profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use fleet_node::config::Args;
use fleet_node::restore::RestoreArgs;

/// Threads of tokio's blocking pool, where store reads and controller steps
/// run (the Raft log and state machine have threads of their own). Unbounded
/// (tokio's 512), a large rollout grew it past 150 threads, and the
/// allocator's per-thread heaps kept their peak: nodes ended at 1.9-2.7 GB
/// after a PickAll over 5,000 clusters.
const BLOCKING_THREADS: usize = 16;

/// Worker threads of the Raft runtime: openraft's core, replication, votes
/// and the other nodes' connections, and nothing else (fleet_node::listener).
/// Its storage work runs on threads of its own (the storage lanes).
const RAFT_THREADS: usize = 1;

fn main() -> anyhow::Result<()> {
    let raft = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RAFT_THREADS)
        .thread_name("fleet-raft")
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()?;
    let main =
        tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(BLOCKING_THREADS).build()?;
    let outcome = main.block_on(run(raft.handle().clone()));
    // Whatever Raft still runs stops with its runtime, outside any runtime.
    drop(main);
    drop(raft);
    outcome
}

async fn run(raft: tokio::runtime::Handle) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `fleet-node restore ...`: prepare a data dir from a backup, then exit.
    if std::env::args().nth(1).as_deref() == Some("restore") {
        let args = std::env::args().enumerate().filter(|(i, _)| *i != 1).map(|(_, a)| a);
        println!("{}", fleet_node::restore::run(RestoreArgs::parse_from(args))?);
        return Ok(());
    }
    let config = Args::parse().into_config()?;
    fleet_node::run(config, fleet_proto::signal::shutdown_signal(), raft).await?;
    Ok(())
}
