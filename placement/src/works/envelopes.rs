//! EN-4, EN-5: one Work per envelope, named after the envelope, with
//! its wrapped objects (cleaned, overridden, in a stable order) as
//! manifests.
//!
//! *Fleet decides:* an envelope Work's name never carries the snapshot part
//! that held the envelope, so an envelope keeps its Work when the snapshot
//! is split differently (the hash names the envelope uniquely).

use std::collections::BTreeMap;

use fleet_api::envelope::{
    wrapped_objects_in, EnvelopeType, ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL, ENVELOPE_WORK_LABEL,
};
use fleet_api::kinds::DeclaredScopes;
use fleet_api::typed::encode;
use fleet_api::Object;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::render::{render_value, ClusterOverrides, RenderError};
use super::work_prefix;
use crate::selection::clean;

/// `<prefix>-envelope-<h>`, `<h>` the first 16 hex digits of sha256 of
/// `<Type>/<namespace>/<name>`.
pub fn envelope_work_name(placement: &Object, kind: EnvelopeType, namespace: &str, name: &str) -> String {
    let digest = hex::encode(Sha256::digest(format!("{}/{namespace}/{name}", kind.as_str()).as_bytes()));
    format!("{}-envelope-{}", work_prefix(placement), &digest[..16])
}

/// One envelope of a prepared group: its identity and its wrapped objects,
/// cleaned, read once for every binding.
#[derive(Debug, Clone)]
pub(super) struct PreparedEnvelope {
    kind: EnvelopeType,
    namespace: String,
    name: String,
    /// The cleaned objects as JSON, or why the envelope cannot be read
    /// (admission refuses such envelopes; kept for the status all the same).
    wrapped: Result<Vec<Value>, String>,
}

impl PreparedEnvelope {
    /// Reads an envelope once, checking its wrapped objects' scopes
    /// against the registry and `scopes`.
    pub(super) fn new(kind: EnvelopeType, envelope: Object, scopes: &DeclaredScopes) -> PreparedEnvelope {
        let namespace = envelope.metadata.namespace.clone().unwrap_or_default();
        let wrapped = wrapped_objects_in(&envelope, scopes)
            .map(|objects| {
                // Cleaned like any selected object (one with only
                // `generateName` keeps it, for the member agent to refuse as
                // `FoundGenerateName`); in KubeFleet's order, by the
                // objects' JSON text, descending (which of two copies of
                // one object applies follows it).
                let mut values: Vec<Value> = objects.into_iter().map(|w| encode(&clean(&w.object))).collect();
                values.sort_by_cached_key(|v| std::cmp::Reverse(v.to_string()));
                values
            })
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "));
        PreparedEnvelope { kind, namespace, name: envelope.metadata.name, wrapped }
    }

    /// `envelope ResourceEnvelope ops/quota`, for messages.
    fn describe(&self) -> String {
        let ns = if self.namespace.is_empty() { String::new() } else { format!("{}/", self.namespace) };
        format!("envelope {} {ns}{}", self.kind.as_str(), self.name)
    }

    /// The envelope's Work name for `placement`.
    pub(super) fn work_name(&self, placement: &Object) -> String {
        envelope_work_name(placement, self.kind, &self.namespace, &self.name)
    }

    /// The envelope labels of its Work (EN-4).
    pub(super) fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (ENVELOPE_WORK_LABEL.to_string(), self.kind.as_str().to_string()),
            (ENVELOPE_NAME_LABEL.to_string(), self.name.clone()),
        ]);
        if !self.namespace.is_empty() {
            labels.insert(ENVELOPE_NAMESPACE_LABEL.to_string(), self.namespace.clone());
        }
        labels
    }

    /// The manifests of this envelope's Work for one cluster: its wrapped
    /// objects overridden (a Delete rule drops one), in KubeFleet's order
    /// (see [`PreparedEnvelope::new`]).
    pub(super) fn manifests(&self, overrides: &ClusterOverrides) -> Result<Vec<Value>, RenderError> {
        let wrapped = self
            .wrapped
            .as_ref()
            .map_err(|why| RenderError::Envelope(format!("{} is invalid: {why}", self.describe())))?;
        let mut objects = Vec::with_capacity(wrapped.len());
        for object in wrapped {
            objects.extend(render_value(object, overrides)?);
        }
        Ok(objects)
    }
}
