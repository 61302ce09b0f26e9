//! Out-of-band edits of an embedded member cluster — `fleet-agent apply -f
//! FILE`, `patch KIND NAME -p JSON`, `delete KIND NAME` on a data dir — as
//! if someone used `kubectl` on that cluster behind Fleet's back
//! ([`crate::targets::embedded::edit`] says what each does).
//!
//! # Safe while the agent runs
//!
//! The running agent keeps the embedded target's records in memory: a
//! second process writing the store's files behind its back would be
//! overwritten or, worse, half-seen. So only one process ever writes them:
//!
//! 1. The agent holds the store lock ([`lock`], `STORE/agent.lock`) for its
//!    whole life and serves an inbox ([`inbox`], `STORE/inbox/`), looking
//!    into it every [`inbox::POLL`].
//! 2. A client first tries to take the lock. If it can, no agent runs: it
//!    opens the store itself, makes the edits, and lets go (an agent
//!    starting meanwhile waits for the lock, up to [`LOCK_WAIT`]).
//! 3. Otherwise it writes a request file atomically into the inbox; the
//!    agent claims it (renaming it), makes the edit through the very code
//!    its own applies use — so `resourceVersion` and `generation` move,
//!    the file is written durably, and its in-memory record follows —, then
//!    writes an answer file atomically; the client reads it and removes it.
//!    Without an answer by the client's deadline the request is withdrawn
//!    (nothing changed), unless the agent already claimed it (then the
//!    client says the outcome is unknown).
//!
//! The agent notices an edit like any change on a real cluster: at its
//! next look at the Works concerned (at the latest one drift-check interval
//! later).

pub mod inbox;
pub mod lock;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use fleet_api::kinds::Scope;
use fleet_api::Object;

use crate::config::{EditApplyArgs, EditDeleteArgs, EditPatchArgs, ObjectArgs};
use crate::inspect::resolve_kind;
use crate::targets::embedded::store::Store;
use crate::targets::embedded::{Edit, EmbeddedTarget, SimConfig};
use crate::targets::{ResourceId, TargetError};
use crate::AgentError;
use lock::StoreLock;

/// How long a starting agent waits for an out-of-band edit holding the store lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The store of the agent data dir `data_dir` (or `data_dir` itself when it
/// is a store directory), which must exist.
fn existing_store(data_dir: &Path) -> Result<Store, AgentError> {
    let store = Store::of_data_dir(data_dir);
    if !store.exists() {
        return Err(AgentError::Target(TargetError::Invalid(format!(
            "{} holds no embedded target (no {}/objects): is it the --data-dir of an agent using the embedded target?",
            data_dir.display(),
            store.root().display()
        ))));
    }
    Ok(store)
}

/// Makes `edits` in order on the embedded target of `data_dir` — through
/// the running agent, or directly when none runs — writing one line per
/// edit made to `out` (`configmap/web created`). Stops at the first refusal.
pub fn run(data_dir: &Path, edits: &[Edit], timeout: Duration, out: &mut impl Write) -> Result<(), AgentError> {
    let store = existing_store(data_dir)?;
    let root = store.root();
    let print = |out: &mut dyn Write, line: String| {
        writeln!(out, "{line}").map_err(|e| AgentError::Edit(format!("cannot write the output: {e}")))
    };
    match StoreLock::try_acquire(root)? {
        Some(_lock) => {
            let config = store.read_config()?.map(|c| c.to_config()).unwrap_or_else(SimConfig::default);
            let target = EmbeddedTarget::open(root, config)?;
            for edit in edits {
                print(out, target.edit(edit)?.line())?;
            }
        }
        None => {
            for edit in edits {
                print(out, inbox::send(root, edit, timeout)?.line())?;
            }
        }
    }
    Ok(())
}

/// The edits of `fleet-agent apply -f`: one per document of `text` (YAML or JSON).
pub fn apply_edits(source: &str, text: &str) -> Result<Vec<Edit>, AgentError> {
    let objects = fleet_api::parse::parse_documents(source, text)
        .map_err(|e| AgentError::Target(TargetError::Invalid(e.to_string())))?;
    Ok(objects.into_iter().map(|object| Edit::Apply { object: Box::new(object) }).collect())
}

/// The object `KIND NAME [-n NS]` names on the embedded target of
/// `data_dir`: the kind as `fleetctl` accepts it (or a custom resource's
/// names), in the namespace — `default` when not given — for a namespaced kind.
pub fn object_id(data_dir: &Path, object: &ObjectArgs) -> Result<ResourceId, AgentError> {
    let store = existing_store(data_dir)?;
    let objects: Vec<Object> = store.load_all()?.into_iter().map(|r| r.object).collect();
    let kind = resolve_kind(&object.kind, &objects)?;
    let (name, namespace) = (object.name.as_str(), object.namespace.as_deref());
    let namespace = match kind.scope {
        Some(Scope::Cluster) => String::new(),
        Some(Scope::Namespaced) => namespace.unwrap_or("default").to_string(),
        None => namespace.unwrap_or_default().to_string(),
    };
    Ok(ResourceId { group: kind.group, version: String::new(), kind: kind.kind, namespace, name: name.to_string() })
}

/// `fleet-agent apply -f FILE|-`: prints one line per object.
pub fn apply_command(args: &EditApplyArgs) -> Result<(), AgentError> {
    let text = if args.file == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| AgentError::io(Path::new("-"), e))?
    } else {
        std::fs::read_to_string(&args.file).map_err(|e| AgentError::io(Path::new(&args.file), e))?
    };
    let edits = apply_edits(&args.file, &text)?;
    run(&args.target.data_dir, &edits, args.target.timeout, &mut std::io::stdout())
}

/// `fleet-agent patch KIND NAME [-n NS] -p JSON`.
pub fn patch_command(args: &EditPatchArgs) -> Result<(), AgentError> {
    let patch: serde_json::Value = serde_json::from_str(&args.patch)
        .map_err(|e| AgentError::Config(format!("-p: Invalid value: {:?}: not JSON: {e}", args.patch)))?;
    let id = object_id(&args.target.data_dir, &args.object)?;
    run(&args.target.data_dir, &[Edit::Patch { id, patch }], args.target.timeout, &mut std::io::stdout())
}

/// `fleet-agent delete KIND NAME [-n NS]`.
pub fn delete_command(args: &EditDeleteArgs) -> Result<(), AgentError> {
    let id = object_id(&args.target.data_dir, &args.object)?;
    run(&args.target.data_dir, &[Edit::Delete { id }], args.target.timeout, &mut std::io::stdout())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::embedded::STORE_DIR;
    use crate::targets::Target;
    use serde_json::json;

    fn args(kind: &str, name: &str, namespace: Option<&str>) -> ObjectArgs {
        ObjectArgs { kind: kind.into(), name: name.into(), namespace: namespace.map(Into::into) }
    }

    fn run_text(data_dir: &Path, edits: &[Edit]) -> Result<String, AgentError> {
        let mut out = Vec::new();
        run(data_dir, edits, Duration::from_secs(10), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[tokio::test]
    async fn without_an_agent_edits_are_made_directly_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join(STORE_DIR);
        drop(EmbeddedTarget::open(&store_dir, SimConfig::default()).unwrap());
        let yaml = "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\ndata: {a: '1'}\n";
        let text = run_text(dir.path(), &apply_edits("f.yaml", yaml).unwrap()).unwrap();
        assert_eq!(text, "namespace/app created\nconfigmap/c created\n");
        let id = object_id(dir.path(), &args("cm", "c", Some("app"))).unwrap();
        let patch = Edit::Patch { id: id.clone(), patch: json!({"data": {"a": "2"}}) };
        assert_eq!(run_text(dir.path(), &[patch]).unwrap(), "configmap/c patched\n");
        let reopened = EmbeddedTarget::open(&store_dir, SimConfig::default()).unwrap();
        assert_eq!(reopened.get(&id).await.unwrap().unwrap().rest["data"], json!({"a": "2"}));
        assert_eq!(object_id(dir.path(), &args("ns", "app", Some("x"))).unwrap().namespace, "", "cluster-scoped");
        assert_eq!(object_id(dir.path(), &args("configmap", "c", None)).unwrap().namespace, "default");
    }

    #[tokio::test]
    async fn with_an_agent_holding_the_store_edits_go_through_its_inbox() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join(STORE_DIR);
        let lock = StoreLock::try_acquire(&store_dir).unwrap().unwrap();
        let target = EmbeddedTarget::open(&store_dir, SimConfig::default()).unwrap();
        let server = tokio::spawn(inbox::serve(target.clone()));
        let data_dir = dir.path().to_path_buf();
        let yaml = "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n";
        let edits = apply_edits("-", yaml).unwrap();
        let text = tokio::task::spawn_blocking(move || run_text(&data_dir, &edits)).await.unwrap().unwrap();
        assert_eq!(text, "namespace/app created\n");
        let id = object_id(dir.path(), &args("namespace", "app", None)).unwrap();
        assert!(target.get(&id).await.unwrap().is_some(), "the agent's in-memory records follow");
        server.abort();
        drop(lock);
    }

    #[test]
    fn a_data_dir_without_an_embedded_target_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = run_text(dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("holds no embedded target"), "{e}");
        assert!(apply_edits("f.yaml", "kind: [").is_err());
    }
}
