//! `apply -f FILE|DIR|-`.

use crate::cli::ApplyArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::files::read_manifests;
use crate::io::Io;
use crate::kind::resource_name;

/// Reads every manifest (any parse error aborts before sending), applies all
/// documents in one atomic request, and prints `kind.group/name action` per object.
pub async fn run(client: &Client, args: &ApplyArgs, io: &mut Io) -> Result<()> {
    let documents = read_manifests(&args.files, io)?;
    if documents.is_empty() {
        return Err(Error::Usage("no objects passed to apply".to_string()));
    }
    let outcome = client.apply(documents).await?;
    let mut text = String::new();
    for (action, object) in &outcome.results {
        text.push_str(&format!("{} {}\n", resource_name(object), action.as_str()));
    }
    io.out(&text)
}
