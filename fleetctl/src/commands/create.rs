//! `create work`: what `clusteradm create work` does, so OCM users deliver
//! files without writing a ManifestWork: one ManifestWork per named
//! cluster (in the namespace named after it), or one
//! ManifestWorkReplicaSet naming an OCM Placement. The objects are applied
//! in one atomic request, so a second run updates them.

use fleet_api::Object;
use serde_json::{json, Value};

use crate::cli::CreateWorkArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::files::read_manifests;
use crate::io::Io;
use crate::kind::resource_name;

/// The ManifestWork API version.
const WORK_V1: &str = "work.open-cluster-management.io/v1";
/// The ManifestWorkReplicaSet API version.
const REPLICASET_V1ALPHA1: &str = "work.open-cluster-management.io/v1alpha1";

fn object(value: Value) -> Result<Object> {
    serde_json::from_value(value).map_err(|e| Error::Usage(format!("cannot build the object: {e}")))
}

/// The objects `create work` applies (see the module doc); the hub
/// validates names and manifests.
pub fn objects(args: &CreateWorkArgs, manifests: Vec<Value>) -> Result<Vec<Object>> {
    if manifests.is_empty() {
        return Err(Error::Usage("no manifests in the files given with -f".to_string()));
    }
    let workload = json!({"manifests": manifests});
    match &args.placement {
        Some(placement) => {
            let (namespace, name) = match placement.split_once('/') {
                Some((ns, name)) => (ns.to_string(), name.to_string()),
                None => (args.namespace.clone().unwrap_or_else(|| "default".into()), placement.clone()),
            };
            if let Some(given) = args.namespace.as_ref().filter(|given| **given != namespace) {
                return Err(Error::Usage(format!(
                    "--placement {placement:?} is in namespace {namespace:?} but -n says {given:?}: \
                     a ManifestWorkReplicaSet names Placements of its own namespace"
                )));
            }
            if name.is_empty() || namespace.is_empty() {
                return Err(Error::Usage(format!("--placement {placement:?}: expected NAMESPACE/NAME or NAME")));
            }
            Ok(vec![object(json!({
                "apiVersion": REPLICASET_V1ALPHA1, "kind": "ManifestWorkReplicaSet",
                "metadata": {"name": args.name, "namespace": namespace},
                "spec": {"placementRefs": [{"name": name}], "manifestWorkTemplate": {"workload": workload}},
            }))?])
        }
        None => {
            if args.clusters.iter().any(String::is_empty) {
                return Err(Error::Usage("--clusters: an empty cluster name".to_string()));
            }
            args.clusters
                .iter()
                .map(|cluster| {
                    object(json!({
                        "apiVersion": WORK_V1, "kind": "ManifestWork",
                        "metadata": {"name": args.name, "namespace": cluster},
                        "spec": {"workload": workload},
                    }))
                })
                .collect()
        }
    }
}

/// Reads the files, builds the objects and applies them in one request.
pub async fn work(client: &Client, args: &CreateWorkArgs, io: &mut Io) -> Result<()> {
    let documents = read_manifests(&args.files, io)?;
    let source = args.files.join(",");
    let manifests: Vec<Value> =
        documents.into_iter().map(|(_, o)| serde_json::to_value(&o).unwrap_or(Value::Null)).collect();
    let objects = objects(args, manifests)?;
    let outcome = client.apply(objects.into_iter().map(|o| (source.clone(), o)).collect()).await?;
    let mut text = String::new();
    for (action, object) in &outcome.results {
        text.push_str(&format!("{} {}\n", resource_name(object), action.as_str()));
    }
    io.out(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(clusters: &[&str], placement: Option<&str>, namespace: Option<&str>) -> CreateWorkArgs {
        CreateWorkArgs {
            name: "web".into(),
            files: vec!["web.yaml".into()],
            clusters: clusters.iter().map(|c| c.to_string()).collect(),
            placement: placement.map(str::to_string),
            namespace: namespace.map(str::to_string),
        }
    }

    fn cm() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "app"}})
    }

    #[test]
    fn one_manifestwork_per_named_cluster() {
        let made = objects(&args(&["east", "west"], None, None), vec![cm()]).unwrap();
        let names: Vec<(String, String)> =
            made.iter().map(|o| (o.metadata.namespace.clone().unwrap_or_default(), o.kind.clone())).collect();
        assert_eq!(names, [("east".into(), "ManifestWork".into()), ("west".into(), "ManifestWork".into())]);
        assert_eq!(made[0].spec().unwrap()["workload"]["manifests"][0], cm());
    }

    #[test]
    fn a_replica_set_for_a_placement_in_its_namespace() {
        let made = objects(&args(&[], Some("ops/prod"), None), vec![cm()]).unwrap();
        assert_eq!(made.len(), 1);
        assert_eq!(
            (made[0].kind.as_str(), made[0].metadata.namespace.as_deref()),
            ("ManifestWorkReplicaSet", Some("ops"))
        );
        let spec = made[0].spec().unwrap();
        assert_eq!(spec["placementRefs"], json!([{"name": "prod"}]));
        assert_eq!(spec["manifestWorkTemplate"]["workload"]["manifests"][0], cm());
        let in_n = objects(&args(&[], Some("prod"), Some("ops")), vec![cm()]).unwrap();
        assert_eq!(in_n[0].metadata.namespace.as_deref(), Some("ops"));
    }

    #[test]
    fn refuses_what_cannot_be_made() {
        let e = objects(&args(&[], Some("ops/prod"), Some("dev")), vec![cm()]).unwrap_err().to_string();
        assert!(e.contains("in namespace \"ops\" but -n says \"dev\""), "{e}");
        let e = objects(&args(&["east"], None, None), vec![]).unwrap_err().to_string();
        assert!(e.contains("no manifests"), "{e}");
        let e = objects(&args(&[], Some("ops/"), None), vec![cm()]).unwrap_err().to_string();
        assert!(e.contains("expected NAMESPACE/NAME or NAME"), "{e}");
    }

    #[test]
    fn clusters_or_a_placement_but_not_both() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut line = vec!["fleetctl", "create", "work", "web", "-f", "web.yaml"];
            line.extend_from_slice(extra);
            crate::cli::Cli::try_parse_from(line)
        };
        assert!(parse(&["--clusters", "east,west"]).is_ok());
        assert!(parse(&["--placement", "ops/prod"]).is_ok());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--clusters", "east", "--placement", "ops/prod"]).is_err());
    }
}
