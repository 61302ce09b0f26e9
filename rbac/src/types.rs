//! The RBAC objects, read from their JSON (as stored or as sent).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::selector::LabelSelector;
use crate::RbacError;

/// The API group of the RBAC kinds.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// One rule of a role: verbs on resources, or verbs on non-resource URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// `get`, `list`, ..., or `*`.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// API groups (`""` is the core group), or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Plurals, `plural/subresource`, `*/subresource`, or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names the rule is limited to (empty: every name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Paths such as `/healthz`, or prefixes ending in `*`.
    #[serde(default, rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A resource rule.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..PolicyRule::default()
        }
    }

    /// A non-resource rule.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), non_resource_urls: strings(urls), ..PolicyRule::default() }
    }

    /// The same rule limited to `names`.
    pub fn named(mut self, names: &[&str]) -> PolicyRule {
        self.resource_names = strings(names);
        self
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `aggregationRule` of a ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AggregationRule {
    /// The ClusterRoles whose rules are aggregated: those any selector matches.
    #[serde(default)]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// Role or ClusterRole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoleKind {
    /// A namespaced Role.
    Role,
    /// A cluster-wide ClusterRole.
    ClusterRole,
}

impl RoleKind {
    /// The Kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleKind::Role => "Role",
            RoleKind::ClusterRole => "ClusterRole",
        }
    }
}

/// A Role or ClusterRole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// Role or ClusterRole.
    pub kind: RoleKind,
    /// The namespace of a Role (`""` for a ClusterRole).
    pub namespace: String,
    /// The name.
    pub name: String,
    /// `metadata.labels` (what aggregation selects on).
    pub labels: BTreeMap<String, String>,
    /// The rules.
    pub rules: Vec<PolicyRule>,
    /// A ClusterRole's aggregation rule.
    pub aggregation: Option<AggregationRule>,
}

/// RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BindingKind {
    /// A namespaced RoleBinding.
    RoleBinding,
    /// A cluster-wide ClusterRoleBinding.
    ClusterRoleBinding,
}

impl BindingKind {
    /// The Kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            BindingKind::RoleBinding => "RoleBinding",
            BindingKind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }
}

/// `roleRef` of a binding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    /// Always `rbac.authorization.k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// The role's name.
    #[serde(default)]
    pub name: String,
}

/// One subject of a binding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, `""` for service accounts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The user, group or service account name.
    #[serde(default)]
    pub name: String,
    /// A service account's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl Subject {
    /// A `User` subject.
    pub fn user(name: &str) -> Subject {
        Subject { kind: "User".into(), api_group: GROUP.into(), name: name.into(), namespace: String::new() }
    }

    /// A `Group` subject.
    pub fn group(name: &str) -> Subject {
        Subject { kind: "Group".into(), api_group: GROUP.into(), name: name.into(), namespace: String::new() }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// RoleBinding or ClusterRoleBinding.
    pub kind: BindingKind,
    /// The namespace of a RoleBinding (`""` for a ClusterRoleBinding).
    pub namespace: String,
    /// The name.
    pub name: String,
    /// The role granted.
    pub role_ref: RoleRef,
    /// Who it is granted to.
    pub subjects: Vec<Subject>,
}

/// Who asks: a user name and its groups (already including implicit ones
/// such as `system:authenticated`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A user in `groups`.
    pub fn new(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.to_string(), groups: strings(groups) }
    }
}

/// The metadata fields RBAC reads.
struct Meta {
    kind: String,
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
}

fn meta(object: &Value, kind: &str) -> Meta {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let metadata = object.get("metadata");
    let labels = metadata
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|l| l.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default();
    Meta {
        kind: kind.to_string(),
        namespace: text(metadata.and_then(|m| m.get("namespace"))),
        name: text(metadata.and_then(|m| m.get("name"))),
        labels,
    }
}

impl Meta {
    fn display_name(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    fn field<T: serde::de::DeserializeOwned + Default>(&self, object: &Value, field: &str) -> Result<T, RbacError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(value) => serde_json::from_value(value.clone()).map_err(|e| RbacError::Invalid {
                kind: self.kind.clone(),
                name: self.display_name(),
                field: field.to_string(),
                detail: e.to_string(),
            }),
        }
    }
}

impl Role {
    /// Reads a Role or ClusterRole from its JSON (`kind` says which).
    pub fn from_json(kind: RoleKind, object: &Value) -> Result<Role, RbacError> {
        let meta = meta(object, kind.as_str());
        let rules: Vec<PolicyRule> = meta.field(object, "rules")?;
        for (i, rule) in rules.iter().enumerate() {
            validate_rule(&meta, i, rule, kind)?;
        }
        let aggregation = match kind {
            RoleKind::ClusterRole => meta.field::<Option<AggregationRule>>(object, "aggregationRule")?,
            RoleKind::Role => None,
        };
        Ok(Role { kind, namespace: meta.namespace, name: meta.name, labels: meta.labels, rules, aggregation })
    }
}

/// The checks Kubernetes makes of a rule: verbs are required; a rule is
/// either about resources or about non-resource URLs; only a ClusterRole
/// may name URLs.
fn validate_rule(meta: &Meta, i: usize, rule: &PolicyRule, kind: RoleKind) -> Result<(), RbacError> {
    let invalid = |field: &str, detail: &str| RbacError::Invalid {
        kind: meta.kind.clone(),
        name: meta.display_name(),
        field: format!("rules[{i}].{field}"),
        detail: detail.to_string(),
    };
    if rule.verbs.is_empty() {
        return Err(RbacError::Required {
            kind: meta.kind.clone(),
            name: meta.display_name(),
            field: format!("rules[{i}].verbs"),
        });
    }
    let about_resources = !rule.api_groups.is_empty() || !rule.resources.is_empty();
    if !rule.non_resource_urls.is_empty() {
        if kind == RoleKind::Role {
            return Err(invalid("nonResourceURLs", "namespaced roles cannot grant non-resource URLs"));
        }
        if about_resources {
            return Err(invalid(
                "nonResourceURLs",
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
    } else if rule.api_groups.is_empty() {
        return Err(invalid("apiGroups", "resource rules must supply at least one api group"));
    } else if rule.resources.is_empty() {
        return Err(invalid("resources", "resource rules must supply at least one resource"));
    }
    Ok(())
}

impl Binding {
    /// Reads a RoleBinding or ClusterRoleBinding from its JSON.
    pub fn from_json(kind: BindingKind, object: &Value) -> Result<Binding, RbacError> {
        let meta = meta(object, kind.as_str());
        let role_ref: RoleRef = meta.field(object, "roleRef")?;
        let subjects: Vec<Subject> = meta.field(object, "subjects")?;
        let invalid = |field: String, detail: String| RbacError::Invalid {
            kind: meta.kind.clone(),
            name: meta.display_name(),
            field,
            detail,
        };
        let allowed_refs: &[&str] = match kind {
            BindingKind::RoleBinding => &["Role", "ClusterRole"],
            BindingKind::ClusterRoleBinding => &["ClusterRole"],
        };
        if role_ref.name.is_empty() {
            return Err(RbacError::Required {
                kind: meta.kind.clone(),
                name: meta.display_name(),
                field: "roleRef.name".into(),
            });
        }
        if !allowed_refs.contains(&role_ref.kind.as_str()) {
            return Err(invalid(
                "roleRef.kind".into(),
                format!("{:?}: supported values: {}", role_ref.kind, allowed_refs.join(", ")),
            ));
        }
        if role_ref.api_group != GROUP {
            return Err(invalid(
                "roleRef.apiGroup".into(),
                format!("{:?}: supported values: {GROUP}", role_ref.api_group),
            ));
        }
        for (i, subject) in subjects.iter().enumerate() {
            if !matches!(subject.kind.as_str(), "User" | "Group" | "ServiceAccount") {
                return Err(invalid(
                    format!("subjects[{i}].kind"),
                    format!("{:?}: supported values: User, Group, ServiceAccount", subject.kind),
                ));
            }
            if subject.name.is_empty() {
                return Err(RbacError::Required {
                    kind: meta.kind.clone(),
                    name: meta.display_name(),
                    field: format!("subjects[{i}].name"),
                });
            }
            if subject.kind == "ServiceAccount"
                && subject.namespace.is_empty()
                && kind == BindingKind::ClusterRoleBinding
            {
                return Err(RbacError::Required {
                    kind: meta.kind.clone(),
                    name: meta.display_name(),
                    field: format!("subjects[{i}].namespace"),
                });
            }
        }
        Ok(Binding { kind, namespace: meta.namespace, name: meta.name, role_ref, subjects })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_role_and_a_binding() {
        let role = Role::from_json(
            RoleKind::Role,
            &json!({"metadata": {"name": "r", "namespace": "a"},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]}),
        )
        .unwrap();
        assert_eq!(role.rules[0], PolicyRule::resource(&["get"], &[""], &["configmaps"]));
        let binding = Binding::from_json(
            BindingKind::RoleBinding,
            &json!({"metadata": {"name": "b", "namespace": "a"},
                    "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
                    "subjects": [{"kind": "Group", "apiGroup": GROUP, "name": "team-a"}]}),
        )
        .unwrap();
        assert_eq!(binding.subjects, vec![Subject::group("team-a")]);
    }

    #[test]
    fn refuses_malformed_objects_naming_the_field() {
        let err = Role::from_json(
            RoleKind::Role,
            &json!({"metadata": {"name": "r", "namespace": "a"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("rules[0].nonResourceURLs"), "{err}");
        let err = Role::from_json(RoleKind::ClusterRole, &json!({"metadata": {"name": "r"}, "rules": [{"verbs": []}]}))
            .unwrap_err();
        assert_eq!(err.to_string(), "ClusterRole \"r\": rules[0].verbs: Required value");
        let err = Binding::from_json(
            BindingKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("roleRef.kind"), "{err}");
        let err = Role::from_json(RoleKind::Role, &json!({"metadata": {"name": "r"}, "rules": "no"})).unwrap_err();
        assert!(err.to_string().starts_with("Role \"r\": rules: Invalid value"), "{err}");
    }
}
