//! Rendering a Bound binding's Works for its cluster: the main Works (one
//! per snapshot part) with the non-envelope resources after overrides, and
//! one Work per envelope (EN-4).

use std::collections::BTreeMap;

use fleet_api::binding::spec_of as binding_spec_of;
use fleet_api::envelope::{
    envelope_type, EnvelopeType, ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL, ENVELOPE_WORK_LABEL,
};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::placement::{spec_of as placement_spec_of, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{resource_spec_of, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL, SUBINDEX_ANNOTATION};
use fleet_api::typed::{decode, encode};
use fleet_api::work::{ApplyStrategy, DeleteOptions, WorkSpec, Workload};
use fleet_api::{Object, ObjectMeta, OwnerReference};
use serde_json::Value;

use super::envelopes::{envelope_manifests, envelope_work_name};
use super::{work_name, PARENT_BINDING_LABEL, PARENT_NAMESPACE_LABEL, PARENT_RESOURCE_INDEX_LABEL, WORK_KIND};
use crate::overrides::{self, OverrideFailure, OverrideSnapshot, ResourceId};

/// The override snapshots a binding records, decoded, with its cluster's
/// name and labels (for rule matching and variables).
#[derive(Debug, Clone, Default)]
pub struct ClusterOverrides {
    /// The cluster's labels.
    pub labels: BTreeMap<String, String>,
    /// The binding's override snapshots in OV-5 order: CRO snapshots, then RO snapshots.
    pub snapshots: Vec<OverrideSnapshot>,
    /// The cluster's name (`${MEMBER-CLUSTER-NAME}`).
    pub cluster: String,
}

/// Why a binding's Works could not be rendered; its stored Works are kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// OV-7: an override could not apply on this cluster.
    #[error(transparent)]
    Override(#[from] OverrideFailure),
    /// EN-8: an envelope cannot be placed by this placement.
    #[error("{0}")]
    Envelope(String),
}

/// One object rendered through the binding's overrides (`None`: deleted).
pub(super) fn render_object(object: &Object, overrides: &ClusterOverrides) -> Result<Option<Object>, RenderError> {
    if overrides.snapshots.is_empty() {
        return Ok(Some(object.clone()));
    }
    let refs: Vec<&OverrideSnapshot> = overrides.snapshots.iter().collect();
    Ok(overrides::render(object, &overrides.cluster, &overrides.labels, &refs)?)
}

/// A snapshot resource rendered as a manifest (`None`: deleted); decoded
/// only when an override selects it.
fn render_manifest(value: &Value, overrides: &ClusterOverrides) -> Result<Option<Value>, RenderError> {
    let id = ResourceId::of_value(value);
    if !overrides.snapshots.iter().any(|s| overrides::selects(s, id)) {
        return Ok(Some(value.clone()));
    }
    let object: Object = decode(value, "")
        .map_err(|e| OverrideFailure { message: format!("{} {:?} is not a valid object: {e}", id.kind, id.name) })?;
    Ok(render_object(&object, overrides)?.map(|o| encode(&o)))
}

/// Whether a snapshot resource is an envelope, without decoding it unless
/// its kind says it may be.
fn as_envelope(value: &Value) -> Option<(EnvelopeType, Object)> {
    let kind = value.get("kind").and_then(Value::as_str)?;
    if !matches!(kind, "ConfigMap" | "ResourceEnvelope" | "ClusterResourceEnvelope") {
        return None;
    }
    let object: Object = decode(value, "").ok()?;
    envelope_type(&object).map(|t| (t, object))
}

/// The part number of a snapshot in its group (0 for the first).
fn part_of(snapshot: &Object) -> usize {
    snapshot.metadata.annotations.get(SUBINDEX_ANNOTATION).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The apply strategy a Work carries: the binding's if set and readable,
/// else the placement's.
fn apply_strategy(placement: &Object, binding: &Object) -> Option<ApplyStrategy> {
    let from_binding = binding_spec_of(binding).apply_strategy.and_then(|v| decode::<ApplyStrategy>(&v, "").ok());
    from_binding.or_else(|| placement_spec_of(placement).strategy.and_then(|s| s.apply_strategy))
}

/// What every Work of one binding shares.
struct WorkShape {
    namespace: String,
    labels: BTreeMap<String, String>,
    owner: OwnerReference,
    strategy: Option<ApplyStrategy>,
    propagation: String,
}

impl WorkShape {
    fn work(&self, name: String, extra_labels: BTreeMap<String, String>, manifests: Vec<Value>) -> Object {
        let spec = WorkSpec {
            workload: Workload { manifests },
            apply_strategy: self.strategy.clone(),
            delete_options: Some(DeleteOptions { propagation_policy: Some(self.propagation.clone()) }),
        };
        let mut labels = self.labels.clone();
        labels.extend(extra_labels);
        let metadata = ObjectMeta {
            name,
            namespace: Some(self.namespace.clone()),
            labels,
            owner_references: vec![self.owner.clone()],
            ..Default::default()
        };
        let mut rest = serde_json::Map::new();
        rest.insert("spec".into(), encode(&spec));
        Object { api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"), kind: WORK_KIND.into(), metadata, rest }
    }
}

/// The Works a Bound binding needs: one per snapshot of its bound `group`
/// (first snapshot, then sub-snapshots by subindex) holding the
/// non-envelope resources after `overrides`, then one per envelope (EN-4),
/// all in namespace `fleet-member-<cluster>`, labelled with the placement
/// (`kubernetes-fleet.io/parent-CRP`), [`PARENT_BINDING_LABEL`],
/// [`PARENT_RESOURCE_INDEX_LABEL`] (and [`PARENT_NAMESPACE_LABEL`] for an
/// RP), controlled by the binding (so deleting the binding deletes them),
/// with the apply strategy and the delete options.
pub fn desired_works(
    placement: &Object,
    binding: &Object,
    group: &[Object],
    overrides: &ClusterOverrides,
) -> Result<Vec<Object>, RenderError> {
    let cluster = binding_spec_of(binding).target_cluster;
    let mut labels = BTreeMap::from([
        (PARENT_PLACEMENT_LABEL.to_string(), placement.metadata.name.clone()),
        (PARENT_BINDING_LABEL.to_string(), binding.metadata.name.clone()),
    ]);
    if let (true, Some(ns)) = (placement.kind == RESOURCE_PLACEMENT, &placement.metadata.namespace) {
        labels.insert(PARENT_NAMESPACE_LABEL.to_string(), ns.clone());
    }
    let propagation = placement_spec_of(placement)
        .strategy
        .and_then(|s| s.delete_strategy)
        .and_then(|d| d.propagation_policy)
        .unwrap_or_else(|| "Delete".to_string());
    let mut shape = WorkShape {
        namespace: member_namespace(&cluster),
        labels,
        owner: OwnerReference::controller_of(binding),
        strategy: apply_strategy(placement, binding),
        propagation,
    };
    let mut parts: Vec<&Object> = group.iter().collect();
    parts.sort_by_key(|s| part_of(s));
    if let Some(index) = parts.first().and_then(|s| s.metadata.labels.get(RESOURCE_INDEX_LABEL)) {
        shape.labels.insert(PARENT_RESOURCE_INDEX_LABEL.to_string(), index.clone());
    }
    let mut works = Vec::with_capacity(parts.len());
    let mut envelopes = Vec::new();
    for snapshot in parts {
        let resources = resource_spec_of(snapshot).selected_resources;
        let mut manifests = Vec::with_capacity(resources.len());
        for value in &resources {
            match as_envelope(value) {
                Some(envelope) => envelopes.push(envelope),
                None => manifests.extend(render_manifest(value, overrides)?),
            }
        }
        works.push(shape.work(work_name(placement, part_of(snapshot)), BTreeMap::new(), manifests));
    }
    for (kind, envelope) in envelopes {
        let namespace = envelope.metadata.namespace.clone().unwrap_or_default();
        let mut extra = BTreeMap::from([
            (ENVELOPE_WORK_LABEL.to_string(), kind.as_str().to_string()),
            (ENVELOPE_NAME_LABEL.to_string(), envelope.metadata.name.clone()),
        ]);
        if !namespace.is_empty() {
            extra.insert(ENVELOPE_NAMESPACE_LABEL.to_string(), namespace.clone());
        }
        let manifests = envelope_manifests(placement, kind, &envelope, overrides)?;
        let name = envelope_work_name(placement, kind, &namespace, &envelope.metadata.name);
        works.push(shape.work(name, extra, manifests));
    }
    Ok(works)
}
