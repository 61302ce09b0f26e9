//! `delete KIND NAME [-n NS]` and `delete -f FILE`.

use fleet_api::Object;

use super::split_kind_name;
use crate::cli::DeleteArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::files::read_manifests;
use crate::io::Io;
use crate::kind::{qualified_kind, KindArg};

/// Deletes one object by name, or every object of the manifests (going on
/// after a failure, which is printed; the command then fails).
pub async fn run(client: &Client, args: DeleteArgs, io: &mut Io) -> Result<()> {
    if !args.files.is_empty() {
        return delete_manifests(client, &args, io).await;
    }
    let kind_arg = args.kind.clone().ok_or_else(usage)?;
    let (kind_name, name) = split_kind_name(&kind_arg, args.name.clone())?;
    let name = name.ok_or_else(usage)?;
    let kind = KindArg::resolve(&kind_name);
    let namespace = kind.namespace_for(args.namespace.as_deref());
    delete_one(client, &kind, &namespace, &name, args.ignore_not_found, io).await
}

fn usage() -> Error {
    Error::Usage("delete needs KIND NAME, KIND/NAME or -f FILE".to_string())
}

async fn delete_manifests(client: &Client, args: &DeleteArgs, io: &mut Io) -> Result<()> {
    let documents = read_manifests(&args.files, io)?;
    if documents.is_empty() {
        return Err(Error::Usage("no objects passed to delete".to_string()));
    }
    let total = documents.len();
    let mut failed = 0;
    for (_, object) in &documents {
        let kind = KindArg::of_object(object);
        let namespace = match object.metadata.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => kind.namespace_for(Some(ns)),
            _ => kind.namespace_for(args.namespace.as_deref()),
        };
        let name = &object.metadata.name;
        if let Err(e) = delete_one(client, &kind, &namespace, name, args.ignore_not_found, io).await {
            io.err(&format!("{}\n", crate::error_text(&e)))?;
            failed += 1;
        }
    }
    if failed > 0 {
        return Err(Error::Partial { failed, total });
    }
    Ok(())
}

async fn delete_one(
    client: &Client,
    kind: &KindArg,
    namespace: &str,
    name: &str,
    ignore_not_found: bool,
    io: &mut Io,
) -> Result<()> {
    match client.delete(kind, namespace, name, None).await {
        Ok(deleted) => io.out(&deleted_line(kind, name, deleted.as_ref())),
        Err(e) if ignore_not_found && e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

/// What a delete did: gone, or (held by finalizers, as in Kubernetes)
/// marked for deletion until they are removed.
fn deleted_line(kind: &KindArg, name: &str, deleted: Option<&Object>) -> String {
    let what = deleted_kind(kind, deleted);
    match deleted {
        Some(o) if o.metadata.deletion_timestamp.is_some() && !o.metadata.finalizers.is_empty() => format!(
            "{what} \"{name}\" marked for deletion: it goes once its finalizers are removed ({})\n",
            o.metadata.finalizers.join(", ")
        ),
        _ => format!("{what} \"{name}\" deleted\n"),
    }
}

/// `kind.group` of what was deleted: from the server's copy when sent.
fn deleted_kind(kind: &KindArg, deleted: Option<&Object>) -> String {
    match deleted {
        Some(object) if !object.kind.is_empty() => qualified_kind(&object.kind, object.group()),
        _ => kind.qualified(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_kind_prefers_the_servers_copy() {
        let obj: Object =
            serde_json::from_str(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#).unwrap();
        assert_eq!(deleted_kind(&KindArg::resolve("widgets"), Some(&obj)), "widget.example.com");
        assert_eq!(deleted_kind(&KindArg::resolve("widgets"), None), "widgets");
        assert_eq!(deleted_kind(&KindArg::resolve("cm"), None), "configmap");
        assert_eq!(deleted_kind(&KindArg::resolve("deploy"), None), "deployment.apps");
    }

    #[test]
    fn an_object_held_by_finalizers_is_reported_as_marked() {
        let held: Object = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","deletionTimestamp":"t","finalizers":["example.com/keep"]}}"#,
        )
        .unwrap();
        assert_eq!(
            deleted_line(&KindArg::resolve("cm"), "c", Some(&held)),
            "configmap \"c\" marked for deletion: it goes once its finalizers are removed (example.com/keep)\n"
        );
        assert_eq!(deleted_line(&KindArg::resolve("cm"), "c", None), "configmap \"c\" deleted\n");
    }
}
