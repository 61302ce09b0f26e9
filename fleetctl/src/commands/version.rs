//! `version`: fleetctl's own version and, unless `--client`, each hub
//! node's (from `cluster status`, which every node answers for all).

use serde::Serialize;

use crate::cli::{ClusterFormat, VersionArgs};
use crate::client::Client;
use crate::error::Result;
use crate::io::Io;
use crate::output::to_json;
use crate::table::Table;
use crate::types::ClusterStatus;

/// This fleetctl's version.
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `version -o json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<Vec<NodeVersion>>,
}

#[derive(Debug, Serialize)]
struct NodeVersion {
    id: u64,
    address: String,
    reachable: bool,
    /// `null` when the node did not answer or is older than the field.
    version: Option<String>,
}

/// Prints the versions; without a client, only fleetctl's. As text, the
/// client's line comes first, so it shows even when no node answers.
pub async fn run(client: Option<&Client>, args: &VersionArgs, io: &mut Io) -> Result<()> {
    let Some(client) = client else { return io.out(&render(None, args.output)?) };
    if args.output.is_none() {
        io.out(&render(None, None)?)?;
        let status = client.cluster_status(false).await?;
        return io.out(&node_table(&status));
    }
    let status = client.cluster_status(false).await?;
    io.out(&render(Some(&status), args.output)?)
}

fn node_versions(status: &ClusterStatus) -> Vec<NodeVersion> {
    status
        .members
        .iter()
        .map(|m| NodeVersion {
            id: m.id,
            address: m.address.clone(),
            reachable: m.reachable,
            version: m.version.clone(),
        })
        .collect()
}

/// `NODE ADDRESS VERSION`, one row per hub node.
fn node_table(status: &ClusterStatus) -> String {
    let mut table = Table::new(["NODE", "ADDRESS", "VERSION"]);
    for n in node_versions(status) {
        let version = match (n.version, n.reachable) {
            (Some(v), _) => v,
            (None, true) => "unknown (older than the version field)".to_string(),
            (None, false) => "unreachable".to_string(),
        };
        table.push(vec![n.id.to_string(), n.address, version]);
    }
    table.render()
}

fn render(status: Option<&ClusterStatus>, output: Option<ClusterFormat>) -> Result<String> {
    if output == Some(ClusterFormat::Json) {
        return to_json(&Versions { client_version: CLIENT_VERSION, nodes: status.map(node_versions) });
    }
    let mut text = format!("Client Version: {CLIENT_VERSION}\n");
    if let Some(status) = status {
        text.push_str(&node_table(status));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ClusterMember;

    fn member(id: u64, reachable: bool, version: Option<&str>) -> ClusterMember {
        ClusterMember {
            id,
            address: format!("127.0.0.1:700{id}"),
            role: "Follower".into(),
            last_applied: 1,
            reachable,
            digest: None,
            version: version.map(str::to_string),
        }
    }

    fn status() -> ClusterStatus {
        ClusterStatus {
            leader: Some(1),
            term: 2,
            members: vec![member(1, true, Some("0.1.0")), member(2, false, None), member(3, true, None)],
            answered_by: 1,
        }
    }

    #[test]
    fn lists_every_node_with_its_version_or_why_not() {
        let text = render(Some(&status()), None).unwrap();
        assert_eq!(
            text,
            format!(
                "Client Version: {CLIENT_VERSION}\n\
                 NODE   ADDRESS          VERSION\n\
                 1      127.0.0.1:7001   0.1.0\n\
                 2      127.0.0.1:7002   unreachable\n\
                 3      127.0.0.1:7003   unknown (older than the version field)\n"
            )
        );
    }

    #[test]
    fn json_has_the_client_and_each_node() {
        let v: serde_json::Value =
            serde_json::from_str(&render(Some(&status()), Some(ClusterFormat::Json)).unwrap()).unwrap();
        assert_eq!(v["clientVersion"], CLIENT_VERSION);
        assert_eq!(v["nodes"][0]["version"], "0.1.0");
        assert_eq!(v["nodes"][1]["version"], serde_json::Value::Null);
        let client_only: serde_json::Value =
            serde_json::from_str(&render(None, Some(ClusterFormat::Json)).unwrap()).unwrap();
        assert_eq!(client_only, serde_json::json!({"clientVersion": CLIENT_VERSION}));
    }
}
