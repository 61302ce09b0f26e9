//! Per-cluster variables in a ManifestWorkReplicaSet's template, Fleet's
//! extension to OCM: `${MEMBER-CLUSTER-NAME}` and
//! `${MEMBER-CLUSTER-LABEL-KEY-<key>}` anywhere in `manifestWorkTemplate`
//! become, in each cluster's ManifestWork, the cluster's name and the value
//! of its label `<key>` — the substitution KubeFleet's overrides make
//! ([`fleet_placement::overrides::substitute_variables`]). A cluster
//! lacking a label its template names gets no ManifestWork of this
//! template, and the replica set's status says why.

use std::collections::BTreeMap;

use fleet_api::kinds::FLEET_CLUSTER_GROUP;
use fleet_api::ObjectKey;
use fleet_placement::overrides::substitute_variables;
use fleet_statemachine::Store;
use serde_json::Value;

use crate::controllers::ControllerError;

/// What marks a template that uses variables.
const VARIABLE_PREFIX: &str = "${MEMBER-CLUSTER-";

/// Whether `template` (a replica set's `manifestWorkTemplate`) names a
/// per-cluster variable, so that a cluster's change may change what it gets.
pub fn uses_variables(template: &Value) -> bool {
    template.to_string().contains(VARIABLE_PREFIX)
}

/// The template each cluster gets, rendered once per step.
pub struct Templates {
    template: Value,
    variables: bool,
    /// Rendered templates (or why not) of the clusters asked about.
    per_cluster: BTreeMap<String, Result<Value, String>>,
}

impl Templates {
    /// The replica set's `template`, not yet rendered for any cluster.
    pub fn new(template: Value) -> Templates {
        let variables = uses_variables(&template);
        Templates { template, variables, per_cluster: BTreeMap::new() }
    }

    /// Renders the template for `cluster` (reading its MemberCluster's
    /// labels), if it uses variables and was not rendered yet.
    pub fn prepare(&mut self, store: &Store, cluster: &str) -> Result<(), ControllerError> {
        if !self.variables || self.per_cluster.contains_key(cluster) {
            return Ok(());
        }
        let member = store.get(&ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", cluster))?.0;
        let labels = member.map(|m| m.metadata.labels).unwrap_or_default();
        let rendered = substitute_variables(&self.template, cluster, &labels)
            .map_err(|why| format!("cannot render the template for {cluster}: {why}"));
        self.per_cluster.insert(cluster.to_string(), rendered);
        Ok(())
    }

    /// The template `cluster` gets, or why it gets none. A cluster not
    /// prepared gets none when the template uses variables.
    pub fn of(&self, cluster: &str) -> Result<&Value, &str> {
        if !self.variables {
            return Ok(&self.template);
        }
        match self.per_cluster.get(cluster) {
            Some(Ok(rendered)) => Ok(rendered),
            Some(Err(why)) => Err(why),
            None => Err("not rendered"),
        }
    }

    /// Why `cluster` gets no ManifestWork, if its template could not be
    /// rendered.
    pub fn failure(&self, cluster: &str) -> Option<&str> {
        self.per_cluster.get(cluster).and_then(|r| r.as_ref().err()).map(String::as_str)
    }
}
