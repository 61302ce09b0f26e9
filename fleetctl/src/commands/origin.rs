//! `origin KIND NAME [-n NS] [--cluster C]`: where an object on a member
//! cluster came from, answered from the hub alone: every Work that holds a
//! manifest of that object, the cluster it is for, the placement that
//! rendered it (or the envelope it was unwrapped from) and whether the
//! member reported it applied. The member-side answer is the annotations the
//! agent stamps on every object it applies (`fleet-agent inspect -o origin`).

use fleet_api::envelope::{ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL, ENVELOPE_WORK_LABEL};
use fleet_api::member::member_namespace;
use fleet_api::work::{self, PlacementRef, CONDITION_APPLIED};
use fleet_api::Object;
use serde_json::Value;

use super::split_kind_name;
use crate::cli::OriginArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::table::Table;
use crate::types::ListQuery;

/// The object asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The API group, when the kind is known (then it must match too).
    pub group: Option<String>,
    /// The kind as objects spell it.
    pub kind: String,
    /// The namespace; `None` matches any (a kind the registry does not know).
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

/// One Work that places the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The member cluster the Work is for.
    pub cluster: String,
    /// The Work's name.
    pub work: String,
    /// The placement that rendered the Work, if one did.
    pub placement: Option<PlacementRef>,
    /// `TYPE NS/NAME` of the envelope the manifest was unwrapped from.
    pub envelope: Option<String>,
    /// The manifest's `Applied` status as the member reported it (`-` if not yet).
    pub applied: String,
}

/// Runs `origin`.
pub async fn run(client: &Client, args: &OriginArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let name = name.ok_or_else(|| Error::Usage("origin needs the object's name".to_string()))?;
    let kind = KindArg::resolve(&kind_name);
    let namespace = kind.namespace_for(args.namespace.as_deref());
    let wanted = Wanted {
        group: kind.info.map(|i| i.group.to_string()),
        kind: kind.kind().to_string(),
        namespace: (kind.info.is_some() || args.namespace.is_some()).then_some(namespace),
        name,
    };
    let query = ListQuery {
        kind: KindArg::resolve("Work"),
        namespace: args.cluster.as_deref().map(member_namespace).unwrap_or_default(),
        all_namespaces: args.cluster.is_none(),
        label_selector: String::new(),
        consistent: false,
    };
    let works = client.list(&query).await?.items;
    let found = origins(&works, &wanted);
    if found.is_empty() {
        let on = args.cluster.as_deref().map(|c| format!(" for cluster {c:?}")).unwrap_or_default();
        return Err(Error::NoOrigin(format!("no Work{on} on the hub places {}", describe(&wanted))));
    }
    io.out(&table(&found).render())
}

/// Every Work among `works` holding a manifest of `wanted`, by cluster and
/// Work name.
pub fn origins(works: &[Object], wanted: &Wanted) -> Vec<Origin> {
    let mut found: Vec<Origin> = works
        .iter()
        .filter_map(|w| {
            let cluster = w.metadata.namespace.as_deref()?.strip_prefix("fleet-member-")?.to_string();
            let spec = work::spec_of(w);
            let ordinal = spec.workload.manifests.iter().position(|m| matches(m, wanted))?;
            Some(Origin {
                cluster,
                work: w.metadata.name.clone(),
                placement: PlacementRef::of_work(w),
                envelope: envelope_of(w),
                applied: applied(w, ordinal),
            })
        })
        .collect();
    found.sort_by(|a, b| (&a.cluster, &a.work).cmp(&(&b.cluster, &b.work)));
    found
}

/// Whether a manifest is the wanted object.
fn matches(manifest: &Value, wanted: &Wanted) -> bool {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let api_version = text(manifest.get("apiVersion"));
    let group = api_version.rsplit_once('/').map(|(g, _)| g.to_string()).unwrap_or_default();
    let meta = manifest.get("metadata");
    text(manifest.get("kind")).eq_ignore_ascii_case(&wanted.kind)
        && wanted.group.as_ref().is_none_or(|g| *g == group)
        && wanted.namespace.as_ref().is_none_or(|ns| *ns == text(meta.and_then(|m| m.get("namespace"))))
        && text(meta.and_then(|m| m.get("name"))) == wanted.name
}

/// The envelope a Work's manifests were unwrapped from: `TYPE NS/NAME`.
pub(super) fn envelope_of(work: &Object) -> Option<String> {
    let labels = &work.metadata.labels;
    let type_ = labels.get(ENVELOPE_WORK_LABEL)?;
    let namespace = labels.get(ENVELOPE_NAMESPACE_LABEL).map(|n| format!("{n}/")).unwrap_or_default();
    let name = labels.get(ENVELOPE_NAME_LABEL).cloned().unwrap_or_default();
    Some(format!("{type_} {namespace}{name}"))
}

/// The reported `Applied` status of the manifest at `ordinal`.
fn applied(work: &Object, ordinal: usize) -> String {
    let status = work::status_of(work);
    status
        .manifest_conditions
        .iter()
        .find(|m| usize::try_from(m.identifier.ordinal).ok() == Some(ordinal))
        .and_then(|m| m.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED))
        .map_or_else(|| "-".to_string(), |c| c.status.clone())
}

/// `Kind ns/name` for messages.
fn describe(wanted: &Wanted) -> String {
    match wanted.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{} {ns}/{}", wanted.kind, wanted.name),
        None => format!("{} {}", wanted.kind, wanted.name),
    }
}

/// The table `origin` prints.
fn table(found: &[Origin]) -> Table {
    let mut table = Table::new(["CLUSTER", "WORK", "PLACEMENT", "ENVELOPE", "APPLIED"]);
    for o in found {
        table.push(vec![
            o.cluster.clone(),
            o.work.clone(),
            o.placement.as_ref().map_or_else(|| "-".to_string(), ToString::to_string),
            o.envelope.clone().unwrap_or_else(|| "-".to_string()),
            o.applied.clone(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn work(cluster: &str, name: &str, labels: Value, manifests: Value, status: Value) -> Object {
        serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": name, "namespace": format!("fleet-member-{cluster}"), "labels": labels},
            "spec": {"workload": {"manifests": manifests}}, "status": status}))
        .unwrap()
    }

    fn config_map(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}})
    }

    fn wanted(namespace: Option<&str>) -> Wanted {
        Wanted {
            group: Some(String::new()),
            kind: "ConfigMap".into(),
            namespace: namespace.map(str::to_string),
            name: "settings".into(),
        }
    }

    #[test]
    fn finds_each_work_placing_the_object_with_its_placement_envelope_and_applied_status() {
        let applied = json!({"manifestConditions": [{"identifier": {"ordinal": 1, "group": "", "version": "v1",
            "kind": "ConfigMap", "namespace": "shop", "name": "settings"},
            "conditions": [{"type": "Applied", "status": "True", "reason": "ManifestApplied", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]});
        let works = [
            work(
                "west",
                "shop.web-work",
                json!({"kubernetes-fleet.io/parent-CRP": "web", "kubernetes-fleet.io/parent-placement-namespace": "shop"}),
                json!([config_map("shop", "other"), config_map("shop", "settings")]),
                applied,
            ),
            work(
                "east",
                "ops-envelope-1",
                json!({"kubernetes-fleet.io/parent-CRP": "ops", ENVELOPE_WORK_LABEL: "ResourceEnvelope",
                       ENVELOPE_NAME_LABEL: "bundle", ENVELOPE_NAMESPACE_LABEL: "ops"}),
                json!([config_map("shop", "settings")]),
                json!({}),
            ),
            work("east", "unrelated", json!({}), json!([config_map("other", "settings")]), json!({})),
        ];
        let found = origins(&works, &wanted(Some("shop")));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].cluster.as_str(), found[0].work.as_str()), ("east", "ops-envelope-1"));
        assert_eq!(
            found[0].placement.as_ref().map(ToString::to_string).as_deref(),
            Some("ClusterResourcePlacement ops")
        );
        assert_eq!(found[0].envelope.as_deref(), Some("ResourceEnvelope ops/bundle"));
        assert_eq!(found[0].applied, "-");
        assert_eq!(found[1].placement.as_ref().map(ToString::to_string).as_deref(), Some("ResourcePlacement shop/web"));
        assert_eq!((found[1].envelope.as_deref(), found[1].applied.as_str()), (None, "True"));
        let text = table(&found).render();
        assert!(text.starts_with("CLUSTER   WORK"), "{text}");
        // Any namespace, when the kind is unknown to fleetctl and -n is not given.
        assert_eq!(origins(&works, &wanted(None)).len(), 3);
    }

    #[test]
    fn the_group_and_kind_must_match() {
        let works = [work(
            "east",
            "w",
            json!({}),
            json!([{"apiVersion": "example.com/v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop"}}]),
            json!({}),
        )];
        assert!(origins(&works, &wanted(Some("shop"))).is_empty());
        let any_group = Wanted { group: None, ..wanted(Some("shop")) };
        assert_eq!(origins(&works, &any_group).len(), 1);
    }
}
