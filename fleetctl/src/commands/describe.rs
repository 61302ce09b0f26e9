//! `describe KIND NAME [-n NS]`.

use std::time::SystemTime;

use fleet_api::snapshot::{snapshot_kinds, PARENT_PLACEMENT_LABEL};
use fleet_api::Object;

use super::split_kind_name;
use crate::cli::DescribeArgs;
use crate::client::Client;
use crate::describe::{involves, ocm, placement, render, run};
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::{KindArg, DEFAULT_NAMESPACE};
use crate::types::ListQuery;

/// Prints the object and the Events about it (from its namespace, or
/// `default` for cluster-scoped objects); for a placement, also its latest
/// scheduling policy snapshot's decisions; for an OCM Placement, its
/// decision pages and candidates' scores.
pub async fn run(client: &Client, args: DescribeArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let name = name.ok_or_else(|| Error::Usage("describe needs KIND NAME".to_string()))?;
    let kind = KindArg::resolve(&kind_name);
    let namespace = kind.namespace_for(args.namespace.as_deref());
    let object = client.get(&kind, &namespace, &name, args.consistent).await?;
    let events_namespace = match object.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => ns.to_string(),
        _ => DEFAULT_NAMESPACE.to_string(),
    };
    let query =
        ListQuery { consistent: args.consistent, ..ListQuery::new(KindArg::resolve("Event"), events_namespace) };
    let events = match client.list(&query).await {
        Ok(list) => list.items.into_iter().filter(|e| involves(e, &object)).collect(),
        Err(e) => {
            io.err(&format!("warning: cannot list events: {e}\n"))?;
            Vec::new()
        }
    };
    if ocm::is_ocm_placement(&object) {
        let query = ListQuery {
            consistent: args.consistent,
            label_selector: ocm::pages_selector(&object),
            ..ListQuery::new(KindArg::resolve("placementdecisions"), namespace.clone())
        };
        let pages = match client.list(&query).await {
            Ok(list) => list.items,
            Err(e) => {
                io.err(&format!("warning: cannot list placement decisions: {e}\n"))?;
                Vec::new()
            }
        };
        return io.out(&ocm::render(&object, &pages, &events, SystemTime::now()));
    }
    if placement::is_placement_kind(&object.kind) {
        let snapshots = policy_snapshots(client, &object, args.consistent, io).await?;
        let latest = placement::latest_policy_snapshot(&object, &snapshots);
        return io.out(&placement::render(&object, latest, &events, SystemTime::now()));
    }
    if object.kind == fleet_api::placement::CLUSTER_RESOURCE_PLACEMENT_STATUS {
        return io.out(&placement::render_mirror(&object, &events, SystemTime::now()));
    }
    if run::is_run_kind(&object.kind) {
        return io.out(&run::render(&object, &events, SystemTime::now()));
    }
    io.out(&render(&object, &events, SystemTime::now()))
}

/// The scheduling policy snapshots of `placement` (a warning and none if
/// they cannot be listed).
async fn policy_snapshots(client: &Client, placement: &Object, consistent: bool, io: &mut Io) -> Result<Vec<Object>> {
    let (_, policy_kind) = snapshot_kinds(&placement.kind);
    let query = ListQuery {
        consistent,
        label_selector: format!("{PARENT_PLACEMENT_LABEL}={}", placement.metadata.name),
        ..ListQuery::new(KindArg::resolve(policy_kind), placement.metadata.namespace.clone().unwrap_or_default())
    };
    match client.list(&query).await {
        Ok(list) => Ok(list.items),
        Err(e) => {
            io.err(&format!("warning: cannot list scheduling policy snapshots: {e}\n"))?;
            Ok(Vec::new())
        }
    }
}
