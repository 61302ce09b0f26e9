//! Runs KubeFleet's own end-to-end suite against Fleet (see
//! `fleet_tests::kubefleet_e2e`) and ends with one summary line:
//! `kubefleet-e2e: P passed, F failed, N not applicable`.
//!
//!     kubefleet-e2e [--focus REGEX] [--label-filter EXPR] [--procs N] [--log FILE]
//!     kubefleet-e2e --hold
//!
//! `--hold` only sets the environment up, prints its kubeconfig and keeps it
//! until interrupted: for running the suite binary by hand while working on
//! a divergence. `--procs N` runs the suite in N Ginkgo processes (its
//! specs are written for that; the default is 1).
//! Exits 1 when a spec failed. `conformance/kubefleet-e2e.sh` builds what it
//! needs and runs it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fleet_tests::kubefleet_e2e::Environment;

#[tokio::main]
async fn main() -> ExitCode {
    let mut focus = String::new();
    let mut label_filter = String::new();
    let mut procs = 1;
    let mut log = PathBuf::from("kubefleet-e2e.log");
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--hold") {
        let mut environment = Environment::start().await;
        println!("export KUBECONFIG={}", environment.kubeconfig.display());
        println!("hub data: {}", environment.hub.hub.dir.path().display());
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            tokio::select! {
                _ = &mut interrupted => return ExitCode::SUCCESS,
                _ = tokio::time::sleep(std::time::Duration::from_millis(250)) => environment.rejoin_members(),
            }
        }
    }
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--focus", Some(v)) => focus = v,
            ("--label-filter", Some(v)) => label_filter = v,
            ("--log", Some(v)) => log = PathBuf::from(v),
            ("--procs", Some(v)) if v.parse::<usize>().is_ok_and(|n| n >= 1) => procs = v.parse().unwrap_or(1),
            _ => {
                eprintln!(
                    "usage: kubefleet-e2e [--focus REGEX] [--label-filter EXPR] [--procs N] [--log FILE] | --hold"
                );
                return ExitCode::from(2);
            }
        }
    }
    eprintln!("kubefleet-e2e: starting a Fleet hub and three real member clusters");
    let mut environment = Environment::start().await;
    eprintln!("kubefleet-e2e: running the suite (its output: {})", log.display());
    // An interrupt or a TERM stops the suite; the environment is then
    // dropped, which stops its processes and removes its files.
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = Arc::clone(&stop);
    let signal = fleet_proto::signal::shutdown_signal();
    tokio::spawn(async move {
        signal.await;
        stopper.store(true, Ordering::Relaxed);
    });
    let summary = tokio::task::block_in_place(|| environment.run(&focus, &label_filter, procs, &log, &stop));
    for spec in &summary.not_applicable {
        println!("not applicable: {spec}");
    }
    for (spec, why) in &summary.failed {
        println!("FAILED: {spec}\n    {why}");
    }
    if let Some(failure) = &summary.suite_failure {
        println!("SUITE: {failure}");
    }
    println!("{}", summary.line());
    if summary.failed.is_empty() && summary.suite_failure.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
