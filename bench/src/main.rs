//! `fleet-bench`: `put` drives N concurrent writers against a Fleet hub or
//! etcd and prints throughput and latency; `probe` checks a cluster takes writes.

use clap::Parser;
use fleet_bench::cli::{Cli, Command, OutputFormat};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Put(args) => {
                let report = fleet_bench::put(&args).await?;
                match args.output {
                    OutputFormat::Text => print!("{}", report.text()),
                    OutputFormat::Json => println!("{}", report.json()?),
                }
            }
            Command::WorkLatency(args) => print!("{}", fleet_bench::work_latency::run(&args).await?.text()),
            Command::PlacementLatency(args) => {
                print!("{}", fleet_bench::placement_latency::run(&args).await?.text())
            }
            Command::RolloutLatency(args) => {
                print!("{}", fleet_bench::rollout_latency::run(&args).await?.text())
            }
            Command::StagedLatency(args) => {
                print!("{}", fleet_bench::staged_latency::run(&args).await?.text())
            }
            Command::Members(args) => fleet_bench::members::run(&args, fleet_proto::signal::shutdown_signal()).await?,
            Command::Scale(args) => {
                let report = fleet_bench::scale::run(&args).await?;
                match args.output {
                    OutputFormat::Text => print!("{}", report.text()),
                    OutputFormat::Json => println!("{}", report.json()),
                }
            }
            Command::Breakdown(args) => print!("{}", fleet_bench::breakdown::run(&args).await?.text()),
            Command::RbacCost(args) => print!("{}", fleet_bench::rbac_cost::run(&args).await?.text()),
            Command::KubeCompare(args) => print!("{}", fleet_bench::kube_compare::run(&args).await?.text()),
            Command::Probe(args) => {
                let endpoints = fleet_bench::probe(&args).await?;
                println!("{}: wrote through {}", args.target.name(), endpoints.join(", "));
            }
        }
        Ok(())
    })
}
