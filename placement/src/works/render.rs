//! Rendering a Bound binding's Works for its cluster: the main Works (one
//! per snapshot part) with the non-envelope resources after overrides, and
//! one Work per envelope (EN-4).

use std::collections::BTreeMap;

use fleet_api::binding::spec_of as binding_spec_of;
use fleet_api::envelope::{envelope_type, EnvelopeType};
use fleet_api::kinds::{DeclaredScopes, FLEET_PLACEMENT_GROUP};
use fleet_api::member::member_namespace;
use fleet_api::placement::{spec_of as placement_spec_of, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{resource_spec_of, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL, SUBINDEX_ANNOTATION};
use fleet_api::typed::{decode, encode};
use fleet_api::work::{ApplyStrategy, DeleteOptions};
use fleet_api::{Object, ObjectMeta, OwnerReference};
use serde_json::{json, Value};

use super::envelopes::PreparedEnvelope;
use super::{work_name, PARENT_BINDING_LABEL, PARENT_NAMESPACE_LABEL, PARENT_RESOURCE_INDEX_LABEL, WORK_KIND};
use crate::overrides::{self, OverrideFailure, OverrideSnapshot};

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
    /// The overrides applied, and left an object that is not a valid
    /// object (e.g. `metadata.annotations` set to a string): as KubeFleet,
    /// the Work cannot be synchronized.
    #[error("{0}")]
    Invalid(String),
}

/// One object rendered through the binding's overrides (`None`: deleted).
pub(super) fn render_value(value: &Value, overrides: &ClusterOverrides) -> Result<Option<Value>, RenderError> {
    if overrides.snapshots.is_empty() {
        return Ok(Some(value.clone()));
    }
    let refs: Vec<&OverrideSnapshot> = overrides.snapshots.iter().collect();
    let rendered = overrides::render_value(value, &overrides.cluster, &overrides.labels, &refs)?;
    if let Some(object) = &rendered {
        <Object as serde::Deserialize>::deserialize(object).map_err(|e| {
            let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
            RenderError::Invalid(format!("the override rules leave {kind} {name:?} an invalid object: {e}"))
        })?;
    }
    Ok(rendered)
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

/// A resource snapshot group read once for all the bindings bound to it:
/// each part's non-envelope resources, and each envelope with its wrapped
/// objects (cleaned), so rendering a binding only applies its overrides.
#[derive(Debug, Clone, Default)]
pub struct PreparedGroup {
    /// The group's index label.
    index: Option<String>,
    /// (part number, non-envelope resources), by part.
    parts: Vec<(usize, Vec<Value>)>,
    /// The envelopes, in snapshot order.
    envelopes: Vec<PreparedEnvelope>,
}

impl PreparedGroup {
    /// Reads a group's snapshots (any order); wrapped objects are checked
    /// against the registry's and `scopes` (EN-8: a CRD may have been
    /// stored after the envelope).
    pub fn new(group: &[Object], scopes: &DeclaredScopes) -> PreparedGroup {
        let mut snapshots: Vec<&Object> = group.iter().collect();
        snapshots.sort_by_key(|s| part_of(s));
        let index = snapshots.first().and_then(|s| s.metadata.labels.get(RESOURCE_INDEX_LABEL)).cloned();
        let mut prepared = PreparedGroup { index, ..Default::default() };
        for snapshot in snapshots {
            let mut resources = Vec::new();
            for value in resource_spec_of(snapshot).selected_resources {
                match as_envelope(&value) {
                    Some((kind, envelope)) => prepared.envelopes.push(PreparedEnvelope::new(kind, envelope, scopes)),
                    None => resources.push(value),
                }
            }
            prepared.parts.push((part_of(snapshot), resources));
        }
        prepared
    }
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
    /// The encoded apply strategy.
    strategy: Option<Value>,
    /// The encoded delete options.
    delete_options: Value,
    /// The encoded report-back strategy, when the placement mirrors statuses.
    report_back: Option<Value>,
}

impl WorkShape {
    /// A Work of `manifests`; its spec is built as JSON directly, so the
    /// manifests are moved, never copied again (the shape of [`WorkSpec`]).
    fn work(&self, name: String, extra_labels: BTreeMap<String, String>, manifests: Vec<Value>) -> Object {
        let mut spec = serde_json::Map::new();
        spec.insert("workload".into(), json!({"manifests": Value::Array(manifests)}));
        if let Some(strategy) = &self.strategy {
            spec.insert("applyStrategy".into(), strategy.clone());
        }
        spec.insert("deleteOptions".into(), self.delete_options.clone());
        if let Some(report_back) = &self.report_back {
            spec.insert("reportBackStrategy".into(), report_back.clone());
        }
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
        rest.insert("spec".into(), Value::Object(spec));
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
    desired_works_prepared(placement, binding, &PreparedGroup::new(group, &DeclaredScopes::default()), overrides)
}

/// [`desired_works`] for a group already read into a [`PreparedGroup`]
/// (the controller prepares each bound group once per pass).
pub fn desired_works_prepared(
    placement: &Object,
    binding: &Object,
    group: &PreparedGroup,
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
    if let Some(index) = &group.index {
        labels.insert(PARENT_RESOURCE_INDEX_LABEL.to_string(), index.clone());
    }
    let strategy = placement_spec_of(placement).strategy;
    let propagation = strategy
        .as_ref()
        .and_then(|s| s.delete_strategy.as_ref())
        .and_then(|d| d.propagation_policy.clone())
        .unwrap_or_else(|| "Delete".to_string());
    // Only a mirroring strategy reaches the Work: a Disabled one changes
    // nothing on the member, so it makes no new Work generation either.
    let report_back = strategy.and_then(|s| s.report_back_strategy).filter(|r| r.mirrors()).map(|r| encode(&r));
    let shape = WorkShape {
        namespace: member_namespace(&cluster),
        labels,
        owner: OwnerReference::controller_of(binding),
        strategy: apply_strategy(placement, binding).map(|s| encode(&s)),
        delete_options: encode(&DeleteOptions { propagation_policy: Some(propagation) }),
        report_back,
    };
    let mut works = Vec::with_capacity(group.parts.len() + group.envelopes.len());
    for (part, resources) in &group.parts {
        let mut manifests = Vec::with_capacity(resources.len());
        for value in resources {
            manifests.extend(render_value(value, overrides)?);
        }
        works.push(shape.work(work_name(placement, *part), BTreeMap::new(), manifests));
    }
    for envelope in &group.envelopes {
        let manifests = envelope.manifests(overrides)?;
        works.push(shape.work(envelope.work_name(placement), envelope.labels(), manifests));
    }
    Ok(works)
}
