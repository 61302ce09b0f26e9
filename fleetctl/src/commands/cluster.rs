//! `cluster status | add-node | remove-node`.

use crate::cli::{ClusterCommand, ClusterFormat, ClusterOutput};
use crate::client::Client;
use crate::error::Result;
use crate::io::Io;
use crate::output::to_json;
use crate::table::Table;
use crate::types::ClusterStatus;

/// Runs a `cluster` subcommand and prints the resulting status.
pub async fn run(client: &Client, command: ClusterCommand, io: &mut Io) -> Result<()> {
    let (status, output) = match command {
        ClusterCommand::Status(output) => {
            // The JSON form carries each member's state digest.
            let digest = output.output == Some(ClusterFormat::Json);
            (client.cluster_status(digest).await?, output)
        }
        ClusterCommand::AddNode { id, address, output } => (client.add_node(id, &address).await?, output),
        ClusterCommand::RemoveNode { id, output } => (client.remove_node(id).await?, output),
    };
    io.out(&render(&status, &output)?)
}

fn render(status: &ClusterStatus, output: &ClusterOutput) -> Result<String> {
    match output.output {
        Some(ClusterFormat::Json) => to_json(status),
        None => Ok(status_table(status)),
    }
}

/// `ID ADDRESS ROLE LAST-APPLIED REACHABLE`, one row per member.
pub fn status_table(status: &ClusterStatus) -> String {
    let mut table = Table::new(["ID", "ADDRESS", "ROLE", "LAST-APPLIED", "REACHABLE"]);
    for m in &status.members {
        table.push(vec![
            m.id.to_string(),
            m.address.clone(),
            m.role.clone(),
            m.last_applied.to_string(),
            m.reachable.to_string(),
        ]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ClusterMember;

    fn member(id: u64, role: &str, reachable: bool) -> ClusterMember {
        ClusterMember {
            id,
            address: format!("127.0.0.1:700{id}"),
            role: role.into(),
            last_applied: 40 + id,
            reachable,
            digest: None,
            version: None,
        }
    }

    #[test]
    fn table_marks_the_leader() {
        let status = ClusterStatus {
            leader: Some(1),
            term: 3,
            members: vec![member(1, "Leader", true), member(2, "Follower", false)],
            answered_by: 1,
        };
        assert_eq!(
            status_table(&status),
            "ID   ADDRESS          ROLE       LAST-APPLIED   REACHABLE\n\
             1    127.0.0.1:7001   Leader     41             true\n\
             2    127.0.0.1:7002   Follower   42             false\n"
        );
        let json = render(&status, &ClusterOutput { output: Some(ClusterFormat::Json) }).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["leader"], 1);
        assert_eq!(v["members"][1]["lastApplied"], 42);
    }
}
