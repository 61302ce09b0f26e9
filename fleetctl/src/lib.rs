//! fleetctl: the command-line client of a Fleet hub, as a library so the
//! integration-test harness and the benchmark tool can reuse it.
//!
//! - [`Client`]: the gRPC client (mutual TLS, failover across nodes,
//!   monotonic reads) with typed methods returning [`fleet_api::Object`]s.
//! - [`watch::Watcher`]: a watch that resumes across node failures and relists
//!   when its history expired.
//! - [`pki`]: making the fleet's CA and certificates.
//! - [`rollout`]: a placement's rollout progress, decided from its status.
//! - [`staged`]: a staged update run's progress, decided from its status.
//! - [`run`] / [`run_args`]: the commands, printing to an [`Io`].

pub mod age;
pub mod cli;
pub mod client;
pub mod columns;
pub mod commands;
pub mod describe;
pub mod endpoints;
pub mod error;
pub mod files;
pub mod io;
pub mod kind;
pub mod output;
pub mod pki;
pub mod plan;
pub mod rollout;
pub mod staged;
pub mod table;
pub mod types;
pub mod watch;

pub use cli::Cli;
pub use client::{install_crypto_provider, Client, ClientOptions, WatchStream};
pub use error::{Error, Result};
pub use io::{Captured, Io};
pub use kind::KindArg;
pub use types::{
    ApplyAction, ApplyOutcome, ClusterMember, ClusterStatus, EventType, ListQuery, ObjectList, WatchEvent,
};

/// Runs a parsed command line, printing to `io`.
pub async fn run(cli: Cli, io: &mut Io) -> Result<()> {
    commands::run(cli, io).await
}

/// Parses `args` (the first being the program name) and runs them, as the
/// binary does; a bad command line is an [`Error::Usage`] with clap's text.
pub async fn run_args<I, T>(args: I, io: &mut Io) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let cli = Cli::try_parse_from(args).map_err(|e| Error::Usage(e.render().to_string()))?;
    run(cli, io).await
}

/// How the binary prints an error: server errors as the server worded them
/// (`Error from server (NotFound): ...`), others after `error: `.
pub fn error_text(error: &Error) -> String {
    if error.is_server() {
        error.to_string()
    } else {
        format!("error: {error}")
    }
}
