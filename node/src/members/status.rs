//! What a heartbeat means for a MemberCluster's status — a pure function, so
//! the "write only on change" rule is testable: properties and usage are
//! compared by value (not observation time), conditions by status and reason.

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::member::{
    AgentStatus, HeartbeatReport, MemberClusterStatus, PropertyValue, ResourceUsage, CONDITION_HEALTHY,
    CONDITION_JOINED, CONDITION_NAMESPACES, CONDITION_PROPERTIES,
};

pub use fleet_api::member::MEMBER_AGENT;
/// Reason of the agent entry's `Joined` condition (KubeFleet's).
pub const AGENT_JOINED_REASON: &str = "InternalMemberClusterJoined";
/// Reason of the agent entry's `Healthy` condition (KubeFleet's).
pub const AGENT_HEALTHY_REASON: &str = "InternalMemberClusterHealthy";

/// The status after a heartbeat, or `None` when nothing worth writing changed.
pub fn after_heartbeat(
    current: &MemberClusterStatus,
    report: &HeartbeatReport,
    now: &str,
) -> Option<MemberClusterStatus> {
    let mut next = current.clone();
    let mut changed = false;
    changed |= set_condition(
        &mut next.conditions,
        Condition::new(CONDITION_JOINED, true, "MemberClusterJoined", "the member agent joined and heartbeats"),
        now,
    );
    changed |= set_condition(
        &mut next.conditions,
        Condition::new(CONDITION_HEALTHY, true, "HeartbeatReceived", "the member agent heartbeats in time"),
        now,
    );
    changed |= set_condition(
        &mut next.conditions,
        Condition::new(CONDITION_PROPERTIES, true, "PropertiesCollected", "properties and resource usage reported"),
        now,
    );
    let values_now: Vec<(&String, &String)> = report.properties.iter().collect();
    let values_before: Vec<(&String, &String)> = current.properties.iter().map(|(k, v)| (k, &v.value)).collect();
    if values_now != values_before {
        next.properties = report
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), PropertyValue { value: v.clone(), observation_time: now.to_string() }))
            .collect();
        changed = true;
    }
    // By value: observation times (set by whoever measured) never count as change.
    let by_value = |u: &ResourceUsage| ResourceUsage { observation_time: String::new(), ..u.clone() };
    let usage_now = by_value(&report.resource_usage);
    if current.resource_usage.as_ref().map(by_value).as_ref() != Some(&usage_now) {
        next.resource_usage =
            Some(ResourceUsage { observation_time: now.to_string(), ..report.resource_usage.clone() });
        changed = true;
    }
    // Only when the list changes: namespaces come and go rarely.
    if report.namespaces != current.namespaces {
        next.namespaces = report.namespaces.clone();
        changed = true;
    }
    let mut agent = current
        .agent_status
        .iter()
        .find(|a| a.type_ == MEMBER_AGENT)
        .cloned()
        .unwrap_or(AgentStatus { type_: MEMBER_AGENT.into(), ..Default::default() });
    // The agent's own view, as KubeFleet's member agent reports it on its
    // InternalMemberCluster (copied to the MemberCluster by KubeFleet's hub).
    changed |= set_condition(
        &mut agent.conditions,
        Condition::new(CONDITION_JOINED, true, AGENT_JOINED_REASON, "the member agent joined the hub"),
        now,
    );
    changed |= set_condition(
        &mut agent.conditions,
        Condition::new(CONDITION_HEALTHY, true, AGENT_HEALTHY_REASON, "the member agent heartbeats in time"),
        now,
    );
    // The namespace collection is a cluster fact, as KubeFleet keeps it:
    // among the MemberCluster's conditions, not its agent's.
    for c in &report.conditions {
        let conditions = if c.type_ == CONDITION_NAMESPACES { &mut next.conditions } else { &mut agent.conditions };
        changed |= set_condition(conditions, c.clone(), now);
    }
    // An agent that stopped collecting namespaces reports no condition for
    // them: its old one goes, so the scheduler stops filtering by a list
    // that is no longer kept.
    if !report.conditions.iter().any(|c| c.type_ == CONDITION_NAMESPACES) {
        let before = next.conditions.len();
        next.conditions.retain(|c| c.type_ != CONDITION_NAMESPACES);
        changed |= next.conditions.len() != before;
    }
    if !changed {
        return None;
    }
    agent.last_received_heartbeat = now.to_string();
    next.agent_status.retain(|a| a.type_ != MEMBER_AGENT);
    next.agent_status.push(agent);
    Some(next)
}

/// The status once heartbeats stopped: `Healthy=Unknown`/`HeartbeatTimeout`
/// (placements stay), or `None` if it already says so.
pub fn after_timeout(current: &MemberClusterStatus, silent_for_seconds: u64, now: &str) -> Option<MemberClusterStatus> {
    let mut next = current.clone();
    let message = format!("no heartbeat for {silent_for_seconds}s (more than 3 heartbeat periods)");
    let already = next.conditions.iter().any(|c| c.type_ == CONDITION_HEALTHY && c.status == "Unknown");
    if already {
        return None;
    }
    set_condition(&mut next.conditions, Condition::unknown(CONDITION_HEALTHY, "HeartbeatTimeout", message), now);
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cpu: &str) -> HeartbeatReport {
        let mut r = HeartbeatReport::default();
        r.properties.insert("kubernetes-fleet.io/node-count".into(), "3".into());
        r.resource_usage.available.insert("cpu".into(), cpu.into());
        r
    }

    #[test]
    fn a_steady_cluster_writes_nothing_after_the_first_heartbeat() {
        let first = after_heartbeat(&MemberClusterStatus::default(), &report("4"), "t1").expect("first writes");
        assert!(after_heartbeat(&first, &report("4"), "t2").is_none(), "no change, no write");
        let agent = first.agent_status.iter().find(|a| a.type_ == MEMBER_AGENT).expect("agent entry");
        let reasons: Vec<(&str, &str)> =
            agent.conditions.iter().map(|c| (c.type_.as_str(), c.reason.as_str())).collect();
        assert_eq!(reasons, [("Joined", AGENT_JOINED_REASON), ("Healthy", AGENT_HEALTHY_REASON)]);
        let moved = after_heartbeat(&first, &report("3500m"), "t3").expect("moved usage writes");
        assert_eq!(moved.resource_usage.unwrap().available["cpu"], "3500m");
    }

    #[test]
    fn observation_times_alone_are_not_a_change() {
        let mut a = report("4");
        a.resource_usage.observation_time = "t1".into();
        let first = after_heartbeat(&MemberClusterStatus::default(), &a, "t1").expect("first writes");
        let mut b = report("4");
        b.resource_usage.observation_time = "t2".into();
        assert!(after_heartbeat(&first, &b, "t2").is_none());
    }

    #[test]
    fn namespaces_are_written_when_the_list_changes_only() {
        let with = |names: &[&str]| {
            let mut r = report("4");
            r.namespaces = Some(names.iter().map(|n| (n.to_string(), String::new())).collect());
            r
        };
        let mut report = with(&["default"]);
        report.conditions.push(Condition::new(CONDITION_NAMESPACES, true, "Succeeded", "all"));
        let first = after_heartbeat(&MemberClusterStatus::default(), &report, "t1").unwrap();
        assert!(first.conditions.iter().any(|c| c.type_ == CONDITION_NAMESPACES), "{first:?}");
        let agent = first.agent_status.iter().find(|a| a.type_ == MEMBER_AGENT).unwrap();
        assert!(!agent.conditions.iter().any(|c| c.type_ == CONDITION_NAMESPACES), "not the agent's: {agent:?}");
        assert!(after_heartbeat(&first, &report, "t2").is_none());
        let more = after_heartbeat(&first, &with(&["app", "default"]), "t3").expect("a new namespace writes");
        let listed: Vec<&String> = more.namespaces.as_ref().unwrap().keys().collect();
        assert_eq!(listed, ["app", "default"]);
    }

    #[test]
    fn timeout_marks_unknown_once_and_the_next_heartbeat_heals() {
        let healthy = after_heartbeat(&MemberClusterStatus::default(), &report("4"), "t1").unwrap();
        let late = after_timeout(&healthy, 40, "t2").expect("first timeout writes");
        let h = late.conditions.iter().find(|c| c.type_ == CONDITION_HEALTHY).unwrap();
        assert_eq!((h.status.as_str(), h.reason.as_str()), ("Unknown", "HeartbeatTimeout"));
        assert!(after_timeout(&late, 50, "t3").is_none());
        let back = after_heartbeat(&late, &report("4"), "t4").expect("heals");
        assert!(back.conditions.iter().any(|c| c.type_ == CONDITION_HEALTHY && c.is_true()));
    }
}
