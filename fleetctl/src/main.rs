//! The `fleetctl` binary: parse the command line, run it, report errors.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use fleetctl::{error_text, Cli, Error, Io};

fn main() -> ExitCode {
    fleetctl::install_crypto_provider();
    let cli = Cli::parse();
    // An interrupted `rollout status -w` did not see the rollout complete:
    // scripts waiting on it must not go on as if it had.
    let interrupt_fails = matches!(cli.command, fleetctl::cli::Command::Rollout(_));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start tokio") {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let mut io = Io::std();
        tokio::select! {
            result = fleetctl::run(cli, &mut io) => result,
            _ = tokio::signal::ctrl_c() => match interrupt_fails {
                true => Err(Error::RolloutIncomplete("interrupted before the rollout completed".to_string())),
                false => Ok(()),
            },
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`fleetctl get -w | head`) is the reader's choice, not an error.
        Err(Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}
