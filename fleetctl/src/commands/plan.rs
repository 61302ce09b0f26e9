//! `plan -f FILE`: reads the placements of a manifest, fetches what the
//! scheduler reads from the hub (only reads), and prints what it would decide.

use fleet_api::binding::binding_kind;
use fleet_api::ocm::{addon_score, clusterset, decision};
use fleet_api::placement::RESOURCE_PLACEMENT;
use fleet_api::snapshot::{snapshot_kinds, PARENT_PLACEMENT_LABEL};
use fleet_api::Object;

use crate::cli::{ClusterFormat, PlanArgs};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::files::read_manifests;
use crate::io::Io;
use crate::kind::KindArg;
use crate::plan::{plan, render_json, render_text, Inventory, PlacementKind};
use crate::types::ListQuery;

/// Runs `plan`.
pub async fn run(client: &Client, args: &PlanArgs, io: &mut Io) -> Result<()> {
    let documents = read_manifests(std::slice::from_ref(&args.file), io)?;
    let placements: Vec<Object> =
        documents.into_iter().map(|(_, o)| o).filter(|o| PlacementKind::of(o).is_some()).collect();
    if placements.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no placement found: plan takes a ClusterResourcePlacement, ResourcePlacement or (OCM) Placement",
            args.file
        )));
    }
    let with_ocm = placements.iter().any(|p| PlacementKind::of(p) == Some(PlacementKind::Ocm));
    let mut inventory = fetch(client, with_ocm).await?;
    for placement in placements.iter().filter(|p| PlacementKind::of(p) == Some(PlacementKind::Fleet)) {
        let (_, policy_kind) = snapshot_kinds(&placement.kind);
        inventory.bindings.extend(owned(client, binding_kind(&placement.kind), placement).await?);
        inventory.policy_snapshots.extend(owned(client, policy_kind, placement).await?);
    }
    let now = fleet_api::time::now_unix_millis().div_euclid(1000);
    let plans = placements.iter().map(|p| plan(p, &inventory, now)).collect::<Result<Vec<_>>>()?;
    let text = match args.output {
        Some(ClusterFormat::Json) => render_json(&plans)?,
        None => render_text(&plans),
    };
    io.out(&text)
}

/// Every object of `kind`, in every namespace.
async fn all(client: &Client, kind: &str) -> Result<Vec<Object>> {
    let query = ListQuery {
        kind: KindArg::resolve(kind),
        namespace: String::new(),
        all_namespaces: true,
        label_selector: String::new(),
        consistent: false,
    };
    Ok(client.list(&query).await?.items)
}

/// The objects of `kind` that the KubeFleet placement `placement` owns (its
/// name in the parent label, in its namespace): nothing if it is new.
async fn owned(client: &Client, kind: &str, placement: &Object) -> Result<Vec<Object>> {
    let namespace = match placement.kind.as_str() {
        RESOURCE_PLACEMENT => placement.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
        _ => String::new(),
    };
    let query = ListQuery {
        kind: KindArg::resolve(kind),
        namespace,
        all_namespaces: false,
        label_selector: format!("{PARENT_PLACEMENT_LABEL}={}", placement.metadata.name),
        consistent: false,
    };
    Ok(client.list(&query).await?.items)
}

/// What the scheduler reads; the OCM objects only when an OCM Placement is planned.
async fn fetch(client: &Client, with_ocm: bool) -> Result<Inventory> {
    let mut inventory = Inventory { members: all(client, "MemberCluster").await?, ..Inventory::default() };
    if with_ocm {
        inventory.cluster_sets = all(client, clusterset::SET_KIND).await?;
        inventory.set_bindings = all(client, clusterset::BINDING_KIND).await?;
        inventory.decisions = all(client, decision::KIND).await?;
        inventory.addon_scores = all(client, addon_score::KIND).await?;
    }
    Ok(inventory)
}
