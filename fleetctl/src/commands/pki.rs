//! `pki init | issue-node | issue-member-ca | issue-user | issue-client`.

use crate::cli::PkiCommand;
use crate::error::Result;
use crate::io::Io;
use crate::pki::{init, issue_client, issue_member_ca, issue_node, issue_user, parse_hosts};

/// Runs a `pki` subcommand and lists the files written.
pub fn run(command: PkiCommand, io: &mut Io) -> Result<()> {
    let written = match command {
        PkiCommand::Init { dir, root_dir, nodes, hosts, force } => {
            init(&dir, root_dir.as_deref(), nodes, &parse_hosts(&hosts), force)?
        }
        PkiCommand::IssueNode { dir, root_dir, id, hosts, force } => {
            issue_node(&dir, root_dir.as_deref(), id, &parse_hosts(&hosts), force)?
        }
        PkiCommand::IssueMemberCa { dir, root_dir } => issue_member_ca(&dir, root_dir.as_deref())?,
        PkiCommand::IssueUser { dir, root_dir, name, groups, ttl, force } => {
            issue_user(&dir, root_dir.as_deref(), &name, &groups, ttl, force)?
        }
        PkiCommand::IssueClient { dir, root_dir, name, force } => {
            issue_client(&dir, root_dir.as_deref(), &name, force)?
        }
    };
    let text: String = written.iter().map(|p| format!("wrote {}\n", p.display())).collect();
    io.out(&text)
}
