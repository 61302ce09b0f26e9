//! EN-3, EN-4, EN-5: one Work per envelope, named after the envelope, with
//! its wrapped objects (cleaned, overridden, in a stable order) as
//! manifests.
//!
//! *Fleet decides:* an envelope Work's name never carries the snapshot part
//! that held the envelope, so an envelope keeps its Work when the snapshot
//! is split differently (the hash names the envelope uniquely).

use fleet_api::envelope::{wrapped_objects, EnvelopeType};
use fleet_api::placement::RESOURCE_PLACEMENT;
use fleet_api::typed::encode;
use fleet_api::Object;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::render::{render_object, ClusterOverrides, RenderError};
use super::work_prefix;
use crate::selection::clean;

/// `<prefix>-envelope-<h>` (`ResourceEnvelope`, `ClusterResourceEnvelope`)
/// or `<prefix>-configmap-<h>`, `<h>` the first 16 hex digits of sha256 of
/// `<Type>/<namespace>/<name>`.
pub fn envelope_work_name(placement: &Object, kind: EnvelopeType, namespace: &str, name: &str) -> String {
    let digest = hex::encode(Sha256::digest(format!("{}/{namespace}/{name}", kind.as_str()).as_bytes()));
    let form = if kind == EnvelopeType::ConfigMap { "configmap" } else { "envelope" };
    format!("{}-{form}-{}", work_prefix(placement), &digest[..16])
}

/// The manifests of one envelope's Work for one cluster: its wrapped
/// objects, cleaned and overridden (a Delete rule drops one), ordered by
/// group, kind, namespace, name.
pub(super) fn envelope_manifests(
    placement: &Object,
    kind: EnvelopeType,
    envelope: &Object,
    overrides: &ClusterOverrides,
) -> Result<Vec<Value>, RenderError> {
    let where_ = || {
        let ns = envelope.metadata.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
        format!("envelope {} {ns}{}", kind.as_str(), envelope.metadata.name)
    };
    let wrapped = wrapped_objects(envelope).map_err(|errors| {
        let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
        RenderError::Envelope(format!("{} is invalid: {}", where_(), list.join("; ")))
    })?;
    let mut objects = Vec::with_capacity(wrapped.len());
    for w in wrapped {
        let cluster_scoped = w.object.metadata.namespace.as_deref().is_none_or(str::is_empty);
        if kind == EnvelopeType::ConfigMap && cluster_scoped && placement.kind == RESOURCE_PLACEMENT {
            return Err(RenderError::Envelope(format!(
                "cluster-scoped object {} ({} {}) in {} can only be placed by a ClusterResourcePlacement",
                w.key,
                w.object.kind,
                w.object.metadata.name,
                where_()
            )));
        }
        if let Some(object) = render_object(&clean(&w.object), overrides)? {
            objects.push(object);
        }
    }
    objects.sort_by(|a, b| {
        let key =
            |o: &Object| (o.group().to_string(), o.kind.clone(), o.metadata.namespace.clone(), o.metadata.name.clone());
        key(a).cmp(&key(b))
    });
    Ok(objects.iter().map(encode).collect())
}
