//! `render KIND NAME --cluster C [-n NS] [-o yaml|json]`: the exact objects
//! one member cluster receives from a placement — its Works' manifests as
//! the hub rendered them for that cluster (overrides applied, envelopes
//! unwrapped), in Work order (main Works, then envelope Works).

use fleet_api::envelope::ENVELOPE_WORK_LABEL;
use fleet_api::member::member_namespace;
use fleet_api::placement::{CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::work::PARENT_NAMESPACE_LABEL;
use fleet_api::Object;
use serde_json::{json, Value};

use super::split_kind_name;
use crate::cli::RenderArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::output::{to_yaml, OutputFormat};
use crate::types::ListQuery;

/// Prints what `--cluster` receives from the placement.
pub async fn run(client: &Client, args: RenderArgs, io: &mut Io) -> Result<()> {
    let (kind_name, name) = split_kind_name(&args.kind, args.name.clone())?;
    let kind = KindArg::resolve(&kind_name);
    if kind.name != CLUSTER_RESOURCE_PLACEMENT && kind.name != RESOURCE_PLACEMENT {
        return Err(Error::Usage(format!("render takes crp or rp, not {kind_name:?}")));
    }
    let name = name.ok_or_else(|| Error::Usage("render needs the placement's name".to_string()))?;
    let namespace = kind.namespace_for(args.namespace.as_deref());
    client.get(&kind, &namespace, &name, false).await?;
    let mut selector = format!("{PARENT_PLACEMENT_LABEL}={name}");
    if kind.name == RESOURCE_PLACEMENT {
        selector.push_str(&format!(",{PARENT_NAMESPACE_LABEL}={namespace}"));
    }
    let query = ListQuery {
        kind: KindArg::resolve("Work"),
        namespace: member_namespace(&args.cluster),
        all_namespaces: false,
        label_selector: selector,
        consistent: false,
    };
    let mut works = client.list(&query).await?.items;
    if kind.name == CLUSTER_RESOURCE_PLACEMENT {
        works.retain(|w| !w.metadata.labels.contains_key(PARENT_NAMESPACE_LABEL));
    }
    if works.is_empty() {
        return Err(Error::Usage(format!(
            "{} {name:?} has no Work for cluster {:?} (not chosen, or not rolled out there yet)",
            kind.name, args.cluster
        )));
    }
    works.sort_by_key(|w| (w.metadata.labels.contains_key(ENVELOPE_WORK_LABEL), w.metadata.name.clone()));
    io.out(&render_works(&works, args.output)?)
}

/// Where a Work's manifests come from, for the YAML comment.
fn origin(work: &Object) -> String {
    match super::origin::envelope_of(work) {
        Some(envelope) => format!("Work {} (unwrapped from {envelope})", work.metadata.name),
        None => format!("Work {}", work.metadata.name),
    }
}

/// The manifests as YAML documents (each Work's preceded by a comment
/// naming it) or as a JSON `List`.
pub fn render_works(works: &[Object], format: Option<OutputFormat>) -> Result<String> {
    let manifests = |w: &Object| fleet_api::work::spec_of(w).workload.manifests;
    if format == Some(OutputFormat::Json) {
        let items: Vec<Value> = works.iter().flat_map(manifests).collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        return serde_json::to_string_pretty(&list).map(|t| t + "\n").map_err(|e| Error::Render(e.to_string()));
    }
    let mut text = String::new();
    for work in works {
        text.push_str(&format!("# {}\n", origin(work)));
        for manifest in manifests(work) {
            text.push_str("---\n");
            text.push_str(&to_yaml(&manifest)?);
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::envelope::{ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL};

    fn work(name: &str, labels: Value, manifests: Value) -> Object {
        serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": name, "namespace": "fleet-member-east-1", "labels": labels},
            "spec": {"workload": {"manifests": manifests}}}))
        .unwrap()
    }

    #[test]
    fn yaml_names_each_work_and_its_envelope_and_json_is_a_list() {
        let works = [
            work(
                "ops-work",
                json!({}),
                json!([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}]),
            ),
            work(
                "ops-envelope-b1a37da808567140",
                json!({ENVELOPE_WORK_LABEL: "ResourceEnvelope", ENVELOPE_NAME_LABEL: "quota", ENVELOPE_NAMESPACE_LABEL: "ops"}),
                json!([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "ops"}}]),
            ),
        ];
        let yaml = render_works(&works, None).unwrap();
        assert!(yaml.starts_with("# Work ops-work\n---\napiVersion: v1\nkind: Namespace\n"), "{yaml}");
        assert!(
            yaml.contains("# Work ops-envelope-b1a37da808567140 (unwrapped from ResourceEnvelope ops/quota)\n---\n"),
            "{yaml}"
        );
        let parsed = fleet_api::parse::parse_documents("-", &yaml).unwrap();
        assert_eq!(parsed.iter().map(|o| o.kind.as_str()).collect::<Vec<_>>(), ["Namespace", "Role"]);
        let json: Value = serde_json::from_str(&render_works(&works, Some(OutputFormat::Json)).unwrap()).unwrap();
        assert_eq!(json["items"].as_array().map(Vec::len), Some(2));
    }
}
