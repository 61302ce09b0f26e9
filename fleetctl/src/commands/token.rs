//! `fleetctl token create`: a bootstrap token for a member cluster.

use crate::cli::TokenCommand;
use crate::client::Client;
use crate::error::Result;
use crate::io::Io;

/// Runs a `token` subcommand: the token on the first line, the CA
/// fingerprint on the second (docs/reference/interfaces.md), the expiry on stderr.
pub async fn run(client: &Client, command: TokenCommand, io: &mut Io) -> Result<()> {
    match command {
        TokenCommand::Create { cluster, ttl } => {
            let created = client.create_token(&cluster, ttl).await?;
            io.out(&format!("{}\n{}\n", created.token, created.ca_fingerprint))?;
            io.err(&format!("token for cluster {cluster:?}, single use, expires at {}\n", created.expires_at))
        }
    }
}
