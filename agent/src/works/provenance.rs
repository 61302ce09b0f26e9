//! Where a placed object came from: every object the agent applies carries
//! annotations naming the placement that selected it (kind, namespace for a
//! ResourcePlacement, name), next to [`OWNER_ANNOTATION`] naming the Work,
//! so "which placement put this object here" is answered on the member
//! itself (`kubectl get -o yaml`, or `fleet-agent inspect --origin`).
//!
//! The placement is read from the Work's labels (KubeFleet's
//! `kubernetes-fleet.io/parent-CRP` and `parent-placement-namespace`, which
//! the hub sets on every Work it renders for a placement). Works without
//! them (OCM ManifestWorks) place objects with the Work annotation only.
//! The annotations belong to Fleet like the owner annotation: drift and diff
//! comparisons never count them.

use fleet_api::work::PlacementRef;
use fleet_api::Object;

use crate::targets::OWNER_ANNOTATION;

/// The placement's kind: `ClusterResourcePlacement` or `ResourcePlacement`.
pub const PLACEMENT_KIND_ANNOTATION: &str = "fleet.kubernetes-fleet.io/placement-kind";
/// A ResourcePlacement's namespace (absent for a ClusterResourcePlacement).
pub const PLACEMENT_NAMESPACE_ANNOTATION: &str = "fleet.kubernetes-fleet.io/placement-namespace";
/// The placement's name.
pub const PLACEMENT_NAME_ANNOTATION: &str = "fleet.kubernetes-fleet.io/placement-name";
/// Every annotation the agent writes on a placed object.
pub const FLEET_ANNOTATIONS: [&str; 4] =
    [OWNER_ANNOTATION, PLACEMENT_KIND_ANNOTATION, PLACEMENT_NAMESPACE_ANNOTATION, PLACEMENT_NAME_ANNOTATION];

/// The placement a Work was rendered for (read from its labels by
/// [`Provenance::of_work`]), which the agent stamps on what it applies.
pub type Provenance = PlacementRef;

/// The placement an applied object names, from its annotations.
pub fn of_object(object: &Object) -> Option<Provenance> {
    let annotations = &object.metadata.annotations;
    Some(Provenance {
        kind: annotations.get(PLACEMENT_KIND_ANNOTATION)?.clone(),
        namespace: annotations.get(PLACEMENT_NAMESPACE_ANNOTATION).cloned().unwrap_or_default(),
        name: annotations.get(PLACEMENT_NAME_ANNOTATION)?.clone(),
    })
}

/// The manifest as the agent writes it: with the placement's annotations
/// (the target adds the Work's). A manifest's own values for these keys are
/// replaced: they are Fleet's.
pub fn stamped(manifest: &Object, provenance: Option<&Provenance>) -> Object {
    let mut object = manifest.clone();
    let annotations = &mut object.metadata.annotations;
    for key in [PLACEMENT_KIND_ANNOTATION, PLACEMENT_NAMESPACE_ANNOTATION, PLACEMENT_NAME_ANNOTATION] {
        annotations.remove(key);
    }
    if let Some(p) = provenance {
        annotations.insert(PLACEMENT_KIND_ANNOTATION.to_string(), p.kind.clone());
        if !p.namespace.is_empty() {
            annotations.insert(PLACEMENT_NAMESPACE_ANNOTATION.to_string(), p.namespace.clone());
        }
        annotations.insert(PLACEMENT_NAME_ANNOTATION.to_string(), p.name.clone());
    }
    object
}

/// "Where did this come from", for `fleet-agent inspect --origin`: the
/// Work and the placement an object names, or that Fleet did not place it.
pub fn origin_text(object: &Object) -> String {
    let id = format!(
        "{} {}{}",
        object.kind,
        object.metadata.namespace.as_deref().map(|ns| format!("{ns}/")).unwrap_or_default(),
        object.metadata.name
    );
    let Some(work) = object.metadata.annotations.get(OWNER_ANNOTATION) else {
        return format!("{id}: not placed by Fleet (no {OWNER_ANNOTATION} annotation)\n");
    };
    let placement = match of_object(object) {
        Some(p) => p.to_string(),
        None => "unknown (applied before Fleet recorded placements, or by a Work no placement rendered)".to_string(),
    };
    format!("{id}\n  Work:       {work}\n  Placement:  {placement}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: serde_json::Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn work(labels: serde_json::Value) -> Object {
        object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "team.web-work", "namespace": "fleet-member-east", "labels": labels}}))
    }

    #[test]
    fn a_work_names_its_placement_by_kubefleets_labels() {
        let crp = Provenance::of_work(&work(json!({"kubernetes-fleet.io/parent-CRP": "web"}))).unwrap();
        assert_eq!(crp.to_string(), "ClusterResourcePlacement web");
        let rp = Provenance::of_work(&work(json!({
            "kubernetes-fleet.io/parent-CRP": "web", "kubernetes-fleet.io/parent-placement-namespace": "team"})))
        .unwrap();
        assert_eq!(rp.to_string(), "ResourcePlacement team/web");
        assert_eq!(Provenance::of_work(&work(json!({"ocm.kubernetes-fleet.io/manifestwork": "mw"}))), None);
    }

    #[test]
    fn stamping_writes_the_placement_and_replaces_a_manifests_own_values() {
        let manifest = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "team", "annotations": {
                PLACEMENT_NAME_ANNOTATION: "forged", PLACEMENT_NAMESPACE_ANNOTATION: "elsewhere", "keep": "me"}}}));
        let p = Provenance { kind: "ClusterResourcePlacement".into(), namespace: String::new(), name: "web".into() };
        let out = stamped(&manifest, Some(&p));
        let a = &out.metadata.annotations;
        assert_eq!(a[PLACEMENT_KIND_ANNOTATION], "ClusterResourcePlacement");
        assert_eq!(a[PLACEMENT_NAME_ANNOTATION], "web");
        assert!(!a.contains_key(PLACEMENT_NAMESPACE_ANNOTATION), "a ClusterResourcePlacement has no namespace");
        assert_eq!(a["keep"], "me");
        assert_eq!(of_object(&out), Some(p));
        let bare = stamped(&manifest, None);
        assert!(!bare.metadata.annotations.contains_key(PLACEMENT_NAME_ANNOTATION));
    }

    #[test]
    fn origin_names_the_work_and_the_placement() {
        let mut live =
            object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}}));
        assert!(origin_text(&live).contains("not placed by Fleet"), "{}", origin_text(&live));
        live.metadata.annotations.insert(OWNER_ANNOTATION.into(), "fleet-member-east/team.web-work".into());
        let p = Provenance { kind: "ResourcePlacement".into(), namespace: "team".into(), name: "web".into() };
        let live = stamped(&live, Some(&p));
        assert_eq!(
            origin_text(&live),
            "ConfigMap team/c\n  Work:       fleet-member-east/team.web-work\n  Placement:  ResourcePlacement team/web\n"
        );
    }
}
