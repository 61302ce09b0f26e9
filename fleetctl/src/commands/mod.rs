//! The commands: each takes its parsed arguments, a [`Client`] when it talks
//! to the hub, and the [`Io`] to print to.

mod apply;
mod approve;
mod cluster;
mod completion;
mod create;
mod delete;
mod describe;
mod drain;
mod get;
mod heartbeats;
mod kubeconfig;
mod origin;
mod pki;
mod plan;
mod render;
mod rollout;
mod snapshot;
mod token;
mod tree;
mod version;

use std::path::Path;

use crate::cli::{Cli, Command};
use crate::client::{Client, ClientOptions};
use crate::endpoints::parse_endpoints;
use crate::error::{Error, Result};
use crate::io::Io;

pub use cluster::status_table;

/// Runs a parsed command line. `get -w` runs until its future is dropped or
/// the watch fails; `rollout status -w` until the rollout is decided or
/// its timeout passes.
pub async fn run(cli: Cli, io: &mut Io) -> Result<()> {
    let Cli { endpoints, tls_dir, user, request_timeout, command } = cli;
    match command {
        Command::Pki(command) => return pki::run(command, io),
        Command::Completion(args) => return completion::run(&args, io),
        Command::Version(args) if args.client => return version::run(None, &args, io).await,
        _ => {}
    }
    let options = ClientOptions { request_timeout: Some(request_timeout), ..ClientOptions::default() };
    let client = connect(endpoints.as_deref(), tls_dir.as_deref(), &user, options).await?;
    match command {
        Command::Kubeconfig => kubeconfig::run(&client, tls_dir.as_deref().ok_or(Error::NoTlsDir)?, &user, io).await,
        Command::Apply(args) => apply::run(&client, &args, io).await,
        Command::Create(crate::cli::CreateCommand::Work(args)) => create::work(&client, &args, io).await,
        Command::Get(args) => get::run(&client, args, io).await,
        Command::Describe(args) => describe::run(&client, args, io).await,
        Command::Delete(args) => delete::run(&client, args, io).await,
        Command::Cluster(command) => cluster::run(&client, command, io).await,
        Command::Token(command) => token::run(&client, command, io).await,
        Command::Snapshot(command) => snapshot::run(&client, command, io).await,
        Command::Rollout(command) => rollout::run(&client, command, io).await,
        Command::Approve(args) => approve::run(&client, &args, io).await,
        Command::Drain(args) => drain::drain(&client, &args, io).await,
        Command::Uncordon(args) => drain::uncordon(&client, &args, io).await,
        Command::Render(args) => render::run(&client, args, io).await,
        Command::Origin(args) => origin::run(&client, &args, io).await,
        Command::Plan(args) => plan::run(&client, &args, io).await,
        Command::Version(args) => version::run(Some(&client), &args, io).await,
        Command::Pki(command) => pki::run(command, io),
        Command::Completion(args) => completion::run(&args, io),
    }
}

/// A client for the global flags: `--endpoints`, `--tls-dir`, `--user`.
pub async fn connect(
    endpoints: Option<&str>,
    tls_dir: Option<&Path>,
    user: &str,
    options: ClientOptions,
) -> Result<Client> {
    let endpoints = parse_endpoints(endpoints.ok_or(Error::NoEndpoints)?)?;
    let tls_dir = tls_dir.ok_or(Error::NoTlsDir)?;
    Client::connect_with(endpoints, tls_dir, user, options).await
}

/// Splits `KIND/NAME` (kubectl's form) when no separate NAME is given.
fn split_kind_name(kind: &str, name: Option<String>) -> Result<(String, Option<String>)> {
    match kind.split_once('/') {
        Some((k, n)) if name.is_none() && !k.is_empty() && !n.is_empty() => Ok((k.to_string(), Some(n.to_string()))),
        Some(_) => Err(Error::Usage(format!("{kind:?}: give either KIND NAME or KIND/NAME"))),
        None => Ok((kind.to_string(), name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_slash_name() {
        assert_eq!(split_kind_name("cm/x", None).unwrap(), ("cm".to_string(), Some("x".to_string())));
        assert_eq!(split_kind_name("cm", Some("x".into())).unwrap(), ("cm".to_string(), Some("x".to_string())));
        assert!(split_kind_name("cm/x", Some("y".into())).is_err());
        assert!(split_kind_name("cm/", None).is_err());
    }
}
