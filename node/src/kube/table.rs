//! `Table` responses (`Accept: ...;as=Table`): the columns `fleetctl get`
//! prints (`fleet_api::columns`), wide-only ones at priority 1 so kubectl
//! shows them with `-o wide`.

use std::time::SystemTime;

use fleet_api::columns::{self, placement::latest_policy_indexes, Lookups, RowContext};
use fleet_api::Object;
use serde_json::{json, Value};

use super::context::Ctx;
use crate::objects::parse_selector;

/// The table of `objects` of `kind` (a watch event is a one-row table).
pub fn table(kind: &str, objects: &[Object], lookups: &Lookups, resource_version: Option<u64>) -> Value {
    let narrow: Vec<&str> = columns::columns_for(kind, false).iter().map(|c| c.header).collect();
    let wide = columns::columns_for(kind, true);
    let definitions: Vec<Value> = wide
        .iter()
        .map(|c| {
            let mut definition = json!({
                "name": title(c.header),
                "type": "string",
                "format": if c.header == "NAME" { "name" } else { "" },
                "description": "",
                "priority": if narrow.contains(&c.header) { 0 } else { 1 },
            });
            if c.header == "AGE" {
                definition["type"] = json!("string");
            }
            definition
        })
        .collect();
    let context = RowContext { now: SystemTime::now(), lookups };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            json!({
                "cells": columns::row(&wide, o, &context),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": serde_json::to_value(&o.metadata).unwrap_or(Value::Null),
                },
            })
        })
        .collect();
    let mut metadata = json!({});
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv.to_string());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// `GEN` → `Gen`, `READY-CLUSTERS` → `Ready-Clusters` (kubectl uppercases
/// them again when printing).
fn title(header: &str) -> String {
    let mut out = String::with_capacity(header.len());
    let mut start = true;
    for c in header.chars() {
        out.push(if start { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() });
        start = !c.is_ascii_alphanumeric();
    }
    out
}

/// What placement columns need from other objects (the latest policy
/// snapshots' indexes), read once per table.
pub async fn lookups(ctx: &Ctx) -> Lookups {
    let kind = ctx.resource.kind.as_str();
    let policy_kind = match kind {
        "ClusterResourcePlacement" => "ClusterSchedulingPolicySnapshot",
        "ResourcePlacement" => "SchedulingPolicySnapshot",
        _ => return Lookups::default(),
    };
    let Some(info) = fleet_api::kinds::lookup_group_kind(&ctx.resource.group, policy_kind) else {
        return Lookups::default();
    };
    let resolved = crate::admission::ResolvedKind {
        group: info.group.to_string(),
        kind: info.kind.to_string(),
        plural: info.plural.to_string(),
        scope: info.scope,
    };
    let selector = parse_selector(&format!("{}=true", fleet_api::snapshot::IS_LATEST_LABEL)).ok().flatten();
    match ctx.api.objects.list(&resolved, None, ctx.namespace.clone(), selector).await {
        Ok((snapshots, _)) => latest_policy_indexes(&snapshots),
        Err(_) => Lookups::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_columns_have_priority_one() {
        let crp = Object::from_json(br#"{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ClusterResourcePlacement","metadata":{"name":"web","generation":1,"creationTimestamp":"2024-01-01T00:00:00Z"},"spec":{}}"#).unwrap();
        let t = table("ClusterResourcePlacement", &[crp], &Lookups::default(), Some(5));
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(defs[0]["name"], "Name");
        assert_eq!(defs[0]["priority"], 0);
        assert!(defs.iter().any(|d| d["priority"] == 1), "wide columns are marked");
        assert_eq!(t["rows"][0]["cells"][0], "web");
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "web");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
        assert_eq!(title("READY-CLUSTERS"), "Ready-Clusters");
    }
}
