//! `pki init | issue-node | issue-client`.

use crate::cli::PkiCommand;
use crate::error::Result;
use crate::io::Io;
use crate::pki::{init, issue_client, issue_node, parse_hosts};

/// Runs a `pki` subcommand and lists the files written.
pub fn run(command: PkiCommand, io: &mut Io) -> Result<()> {
    let written = match command {
        PkiCommand::Init { dir, nodes, hosts, force } => init(&dir, nodes, &parse_hosts(&hosts), force)?,
        PkiCommand::IssueNode { dir, id, hosts, force } => issue_node(&dir, id, &parse_hosts(&hosts), force)?,
        PkiCommand::IssueClient { dir, name, force } => issue_client(&dir, &name, force)?,
    };
    let text: String = written.iter().map(|p| format!("wrote {}\n", p.display())).collect();
    io.out(&text)
}
