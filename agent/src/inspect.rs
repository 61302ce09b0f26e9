//! `fleet-agent inspect --data-dir DIR [KIND [NAME]] [-n NS|-A] [-o json|origin]`:
//! what the embedded target of an agent holds, rendered like `fleetctl get`;
//! with `-o origin`, where one object came from (its Work and placement).
//! It reads the store's files without any lock, so it works while the agent
//! runs, and shows status as the agent would report it at this moment.

use std::path::Path;
use std::time::SystemTime;

use fleet_api::kinds::{self, Scope};
use fleet_api::Object;
use serde_json::{json, Value};

use crate::targets::embedded::config::SimConfig;
use crate::targets::embedded::print;
use crate::targets::embedded::simulate::live_view;
use crate::targets::embedded::store::Store;
use crate::targets::TargetError;
use crate::works::provenance::origin_text;

/// The kind a user named, resolved against the registry and the cluster's CRDs.
pub(crate) struct Kind {
    pub group: String,
    pub kind: String,
    /// `deployments.apps`-style name for messages.
    pub resource: String,
    /// `None` when unknown (decided per object by whether it has a namespace).
    pub scope: Option<Scope>,
}

/// Renders what the embedded target of the agent data dir `dir` holds (in
/// `dir/embedded`, [`STORE_DIR`](crate::targets::embedded::STORE_DIR); `dir`
/// may also be that store directory itself).
///
/// - no `kind`: a summary of every object (KIND, NAMESPACE, NAME, AGE), or
///   of one namespace with `namespace`;
/// - `kind` (any name `fleetctl` accepts: `deploy`, `cm`, `ns`, plurals, or
///   a custom resource's names): a table like `fleetctl get` — NAME, AGE
///   and per-kind columns such as READY `2/2` — of the objects in
///   `namespace` (default `default`) or, with `all_namespaces`, in all of
///   them with a NAMESPACE column;
/// - `name`: that one object;
/// - `json`: the object itself for a `name`, otherwise
///   `{"apiVersion":"v1","kind":"List","items":[...]}`, pretty-printed.
pub fn inspect(
    dir: &Path,
    kind: Option<&str>,
    name: Option<&str>,
    namespace: Option<&str>,
    all_namespaces: bool,
    json: bool,
) -> Result<String, TargetError> {
    let store = Store::of_data_dir(dir);
    if !store.exists() {
        return Err(TargetError::Invalid(format!(
            "{} holds no embedded target (no {}/objects): is it the --data-dir of an agent using the embedded target?",
            dir.display(),
            store.root().display()
        )));
    }
    let nodes = store.read_config()?.map(|c| c.to_config()).unwrap_or_else(SimConfig::default).nodes;
    let now = SystemTime::now();
    let mut objects: Vec<Object> = store.load_all()?.iter().map(|r| live_view(r, nodes, now)).collect();
    objects.sort_by_key(sort_key);
    let namespace = if all_namespaces { None } else { namespace };

    let Some(kind_name) = kind else {
        if name.is_some() {
            return Err(TargetError::Invalid("a NAME needs a KIND (for example: inspect deploy web)".to_string()));
        }
        if let Some(ns) = namespace {
            objects.retain(|o| o.metadata.namespace.as_deref() == Some(ns));
        }
        return if json {
            render_json(&list(&objects))
        } else if objects.is_empty() {
            Ok(no_resources(namespace))
        } else {
            Ok(print::render(&print::summary_columns(), &objects, now))
        };
    };

    let kind = resolve_kind(kind_name, &objects)?;
    objects.retain(|o| o.group() == kind.group && o.kind == kind.kind);
    let namespaced = match kind.scope {
        Some(scope) => scope == Scope::Namespaced,
        None => objects.iter().any(|o| o.metadata.namespace.is_some()),
    };
    let namespace = if namespaced && !all_namespaces { Some(namespace.unwrap_or("default")) } else { None };
    if let Some(ns) = namespace {
        objects.retain(|o| o.metadata.namespace.as_deref() == Some(ns));
    }
    if let Some(name) = name {
        let Some(object) = objects.into_iter().find(|o| o.metadata.name == name) else {
            let place = namespace.map(|ns| format!(" in namespace {ns:?}")).unwrap_or_default();
            return Err(TargetError::Invalid(format!("{} {name:?} not found{place}", kind.resource)));
        };
        return if json {
            render_json(&serde_json::to_value(&object).map_err(render_error)?)
        } else {
            Ok(print::render(&print::columns_for(&kind.group, &kind.kind, false), &[object], now))
        };
    }
    if json {
        render_json(&list(&objects))
    } else if objects.is_empty() {
        Ok(no_resources(namespace))
    } else {
        let columns = print::columns_for(&kind.group, &kind.kind, namespaced && all_namespaces);
        Ok(print::render(&columns, &objects, now))
    }
}

/// "Where did this come from" for one object of the embedded target: the
/// Work and the placement its annotations name ([`origin_text`]).
pub fn origin(
    dir: &Path,
    kind: Option<&str>,
    name: Option<&str>,
    namespace: Option<&str>,
) -> Result<String, TargetError> {
    let (Some(kind), Some(name)) = (kind, name) else {
        return Err(TargetError::Invalid(
            "-o origin needs a KIND and a NAME (for example: inspect cm settings -n team -o origin)".to_string(),
        ));
    };
    let text = inspect(dir, Some(kind), Some(name), namespace, false, true)?;
    let object: Object = serde_json::from_str(&text).map_err(render_error)?;
    Ok(origin_text(&object))
}

fn sort_key(o: &Object) -> (String, String, String, String) {
    (o.group().to_string(), o.kind.clone(), o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone())
}

fn list(objects: &[Object]) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": objects})
}

fn render_error(e: serde_json::Error) -> TargetError {
    TargetError::Unavailable(format!("cannot render JSON: {e}"))
}

fn render_json(value: &Value) -> Result<String, TargetError> {
    serde_json::to_string_pretty(value).map(|s| s + "\n").map_err(render_error)
}

fn no_resources(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("No resources found in {ns} namespace.\n"),
        None => "No resources found\n".to_string(),
    }
}

/// Resolves a kind name: the registry (`deploy`, `cm`, plurals, Kinds, with
/// an optional `.group` suffix), then CRDs stored in the cluster (their
/// kind, plural, singular and short names), then the Kind of any stored object.
pub(crate) fn resolve_kind(name: &str, objects: &[Object]) -> Result<Kind, TargetError> {
    let (base, group) = match name.split_once('.') {
        Some((base, group)) => (base, Some(group)),
        None => (name, None),
    };
    if let Some(info) = kinds::lookup(base).filter(|info| group.is_none_or(|g| g == info.group)) {
        let resource =
            if info.group.is_empty() { info.plural.to_string() } else { format!("{}.{}", info.plural, info.group) };
        return Ok(Kind { group: info.group.into(), kind: info.kind.into(), resource, scope: Some(info.scope) });
    }
    let lower = base.to_ascii_lowercase();
    for crd in objects.iter().filter(|o| o.group() == "apiextensions.k8s.io" && o.kind == "CustomResourceDefinition") {
        let Some(spec) = crd.spec() else { continue };
        let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string();
        let crd_group = text("/group");
        let names = spec.get("names");
        let short: Vec<String> = names
            .and_then(|n| n.get("shortNames"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_ascii_lowercase)
            .collect();
        let kind = text("/names/kind");
        let plural = text("/names/plural");
        let matches = kind.eq_ignore_ascii_case(&lower)
            || plural == lower
            || text("/names/singular") == lower
            || short.contains(&lower);
        if matches && group.is_none_or(|g| g == crd_group) {
            let scope = if text("/scope") == "Cluster" { Scope::Cluster } else { Scope::Namespaced };
            return Ok(Kind { resource: format!("{plural}.{crd_group}"), group: crd_group, kind, scope: Some(scope) });
        }
    }
    if let Some(o) = objects.iter().find(|o| o.kind.eq_ignore_ascii_case(base) && group.is_none_or(|g| g == o.group()))
    {
        return Ok(Kind {
            group: o.group().into(),
            kind: o.kind.clone(),
            resource: o.kind.to_ascii_lowercase(),
            scope: None,
        });
    }
    Err(TargetError::Invalid(format!(
        "the embedded target doesn't have a resource type {name:?} (use a kind such as deploy, cm, ns, or a custom resource's kind)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::embedded::{EmbeddedTarget, SimConfig, STORE_DIR};
    use crate::targets::{ApplyMode, ApplyRequest, Target};

    fn object(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    async fn seeded() -> (tempfile::TempDir, EmbeddedTarget) {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), SimConfig::default()).unwrap();
        for manifest in [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "app"}, "data": {"a": "1"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "app"}, "spec": {"replicas": 2}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
                   "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]}}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "app"}}),
        ] {
            let m = object(manifest);
            target
                .apply(ApplyRequest {
                    manifest: &m,
                    mode: ApplyMode::ClientSide,
                    owner: "fleet-member-a/w",
                    take_over: false,
                })
                .await
                .unwrap();
        }
        (dir, target)
    }

    #[tokio::test]
    async fn tables_by_kind_name_and_namespace() {
        let (dir, _target) = seeded().await;
        let d = dir.path();
        let text = inspect(d, Some("deploy"), None, Some("app"), false, false).unwrap();
        assert!(
            text.starts_with("NAME   READY   UP-TO-DATE   AVAILABLE   AGE\nweb    0/2     2            0"),
            "{text}"
        );
        let text = inspect(d, Some("configmaps"), None, None, true, false).unwrap();
        assert!(text.starts_with("NAMESPACE   NAME   AGE\napp         cfg"), "{text}");
        assert_eq!(
            inspect(d, Some("cm"), None, None, false, false).unwrap(),
            "No resources found in default namespace.\n"
        );
        let text = inspect(d, Some("ns"), None, None, false, false).unwrap();
        assert!(text.contains("app ") && text.contains("kube-system") && text.contains("Active"), "{text}");
        let direct = inspect(&d.join(STORE_DIR), Some("ns"), None, None, false, false).unwrap();
        assert_eq!(direct, text, "the store directory itself is accepted too");
        let text = inspect(d, Some("wd"), None, None, false, false).unwrap();
        assert!(text.contains("w1"), "{text}");
        let text = inspect(d, Some("gadget"), None, Some("app"), false, false).unwrap();
        assert!(text.contains("g1"), "{text}");
        let e = inspect(d, Some("deploy"), Some("nope"), Some("app"), false, false).unwrap_err().to_string();
        assert_eq!(e, "deployments.apps \"nope\" not found in namespace \"app\"");
        let e = inspect(d, Some("frobs"), None, None, false, false).unwrap_err().to_string();
        assert!(e.contains("\"frobs\""), "{e}");
    }

    #[tokio::test]
    async fn summary_and_json() {
        let (dir, _target) = seeded().await;
        let d = dir.path();
        let text = inspect(d, None, None, None, false, false).unwrap();
        assert!(text.starts_with("KIND"), "{text}");
        for (kind, name) in
            [("Deployment", "web"), ("Widget.example.com", "w1"), ("Namespace", "app"), ("ConfigMap", "cfg")]
        {
            let row = text.lines().find(|l| l.starts_with(&format!("{kind} "))).unwrap_or_default();
            assert!(row.contains(&format!(" {name} ")), "{kind} {name} in {text}");
        }
        let text = inspect(d, None, None, Some("app"), false, false).unwrap();
        assert!(!text.contains("Namespace") && text.contains("cfg"), "{text}");
        let one: Value =
            serde_json::from_str(&inspect(d, Some("deploy"), Some("web"), Some("app"), false, true).unwrap()).unwrap();
        assert_eq!(one["kind"], "Deployment");
        assert_eq!(one["status"]["observedGeneration"], 1);
        let list: Value =
            serde_json::from_str(&inspect(d, Some("cm"), None, Some("app"), false, true).unwrap()).unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        assert!(inspect(d, None, Some("x"), None, false, false).is_err());
    }

    #[test]
    fn a_dir_without_a_store_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let e = inspect(dir.path(), None, None, None, false, false).unwrap_err().to_string();
        assert!(e.contains("holds no embedded target"), "{e}");
    }
}
