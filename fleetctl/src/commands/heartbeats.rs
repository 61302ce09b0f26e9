//! Live heartbeat ages for `get mc -o wide`. The hub writes a MemberCluster's
//! status only when something changes, so the stored `lastReceivedHeartbeat`
//! can be old while the cluster is perfectly alive; the leader's in-memory
//! arrival times are the truth, and are folded into the objects shown.

use std::time::{Duration, SystemTime};

use fleet_api::Object;
use serde_json::{json, Value};

use crate::client::Client;

/// Sets `status.agentStatus[MemberAgent].lastReceivedHeartbeat` from the
/// leader's arrival times; leaves objects alone if the leader cannot say.
pub async fn decorate(client: &Client, objects: &mut [Object], now: SystemTime) {
    let Ok(ages) = client.member_heartbeats().await else { return };
    for object in objects.iter_mut() {
        let Some(age) = ages.get(&object.metadata.name) else { continue };
        let at = fleet_api::time::rfc3339_of(now - Duration::from_millis(*age));
        set_last_heartbeat(object, &at);
    }
}

fn set_last_heartbeat(object: &mut Object, at: &str) {
    let status = object.rest.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else { return };
    let agents = status.entry("agentStatus").or_insert_with(|| json!([]));
    let Some(agents) = agents.as_array_mut() else { return };
    match agents.iter_mut().find(|a| a["type"] == "MemberAgent") {
        Some(agent) => agent["lastReceivedHeartbeat"] = Value::String(at.to_string()),
        None => agents.push(json!({"type": "MemberAgent", "lastReceivedHeartbeat": at})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_member_agent_heartbeat() {
        let mut o: Object =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "MemberCluster", "metadata": {"name": "a"}}))
                .unwrap();
        set_last_heartbeat(&mut o, "2026-01-01T00:00:00Z");
        assert_eq!(o.rest["status"]["agentStatus"][0]["lastReceivedHeartbeat"], "2026-01-01T00:00:00Z");
        set_last_heartbeat(&mut o, "2026-01-01T00:00:05Z");
        assert_eq!(o.rest["status"]["agentStatus"].as_array().unwrap().len(), 1);
    }
}
