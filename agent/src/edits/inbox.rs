//! The edit inbox of a running agent, `STORE/inbox/`: requests dropped by
//! `fleet-agent apply|patch|delete`, answered by the agent (see [the
//! protocol](super)).
//!
//! Files, for a request id `ID`:
//! - `ID.request.json` — a [`Request`], written atomically by the client;
//! - `ID.claimed` — the same file renamed by the agent when it takes the
//!   request (a rename is atomic: either the agent claims it or the client
//!   withdraws it, never both);
//! - `ID.response.json` — the [`Response`], written atomically by the
//!   agent before it removes `ID.claimed`; read and removed by the client.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::targets::embedded::store::{sync_dir, write_atomic};
use crate::targets::embedded::{Edit, Edited, EmbeddedTarget};
use crate::targets::TargetError;
use crate::AgentError;

/// The inbox directory's name in the store directory.
pub const INBOX_DIR: &str = "inbox";
const REQUEST: &str = ".request.json";
const CLAIMED: &str = ".claimed";
const RESPONSE: &str = ".response.json";
/// How often the agent looks into its inbox.
pub const POLL: Duration = Duration::from_millis(100);
/// How often a client looks for its answer.
const ANSWER_POLL: Duration = Duration::from_millis(20);
/// How long a client waits for the answer to a request the agent already
/// took, after its own deadline (the edit itself takes milliseconds).
const CLAIMED_GRACE: Duration = Duration::from_secs(5);
/// Answers nobody collected are removed after this long.
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// One edit asked of the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The edit.
    pub edit: Edit,
}

/// The agent's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// What the edit did, or why it was refused.
    pub result: Result<Edited, TargetError>,
}

/// The inbox of the store in `store_dir`.
pub fn inbox_dir(store_dir: &Path) -> PathBuf {
    store_dir.join(INBOX_DIR)
}

fn io(path: &Path, e: std::io::Error) -> AgentError {
    AgentError::io(path, e)
}

/// Serves the inbox of `target`'s store for ever, [`POLL`] apart: every
/// request is applied through [`EmbeddedTarget::edit`] and answered.
/// Requests an earlier run claimed but did not answer (it stopped midway)
/// are served again first — every edit can safely be made twice, a second
/// delete answering "not found". Fails only if the inbox cannot be created.
pub async fn serve(target: EmbeddedTarget) -> Result<(), AgentError> {
    let dir = inbox_dir(target.store_dir());
    fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let mut resume = true;
    loop {
        let (t, d) = (target.clone(), dir.clone());
        let served = tokio::task::spawn_blocking(move || serve_once(&t, &d, resume)).await;
        match served {
            Ok(Err(e)) => tracing::warn!("edit inbox {}: {e}", dir.display()),
            Err(e) => tracing::warn!("edit inbox {}: {e}", dir.display()),
            Ok(Ok(_)) => {}
        }
        resume = false;
        tokio::time::sleep(POLL).await;
    }
}

/// One look into the inbox `dir`: answers every waiting request (and, with
/// `resume`, every claimed one, and drops stale answers); returns how many
/// were answered.
pub fn serve_once(target: &EmbeddedTarget, dir: &Path, resume: bool) -> Result<usize, AgentError> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|entry| entry.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    let mut served = 0;
    for name in names {
        if let Some(id) = name.strip_suffix(REQUEST) {
            let claimed = dir.join(format!("{id}{CLAIMED}"));
            match fs::rename(dir.join(&name), &claimed) {
                Ok(()) => {}
                // Withdrawn by its client meanwhile.
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&claimed, e)),
            }
            served += answered(target, dir, id);
        } else if let Some(id) = name.strip_suffix(CLAIMED).filter(|_| resume) {
            served += answered(target, dir, id);
        } else if resume && name.ends_with(RESPONSE) {
            remove_if_older(&dir.join(&name), ORPHAN_AGE);
        }
    }
    Ok(served)
}

/// [`answer`], logging a failure (the client then times out): 1 if answered.
fn answered(target: &EmbeddedTarget, dir: &Path, id: &str) -> usize {
    match answer(target, dir, id) {
        Ok(()) => 1,
        Err(e) => {
            tracing::warn!(request = id, "cannot answer an out-of-band edit: {e}");
            0
        }
    }
}

/// Applies the claimed request `id` and writes its answer.
fn answer(target: &EmbeddedTarget, dir: &Path, id: &str) -> Result<(), AgentError> {
    let claimed = dir.join(format!("{id}{CLAIMED}"));
    let bytes = fs::read(&claimed).map_err(|e| io(&claimed, e))?;
    let result = match serde_json::from_slice::<Request>(&bytes) {
        Ok(request) => target.edit(&request.edit),
        Err(e) => Err(TargetError::Invalid(format!("unreadable edit request {}: {e}", claimed.display()))),
    };
    match &result {
        Ok(done) => tracing::info!(request = id, "out-of-band edit: {}", done.line()),
        Err(e) => tracing::info!(request = id, "out-of-band edit refused: {e}"),
    }
    let response = serde_json::to_vec(&Response { result })
        .map_err(|e| AgentError::Edit(format!("cannot encode the answer to edit request {id}: {e}")))?;
    write_atomic(dir, &format!("{id}{RESPONSE}"), &response)?;
    fs::remove_file(&claimed).map_err(|e| io(&claimed, e))?;
    sync_dir(dir)?;
    Ok(())
}

fn remove_if_older(path: &Path, age: Duration) {
    let old = fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() > age);
    if old {
        let _ = fs::remove_file(path);
    }
}

/// Hands `edit` to the agent serving the store in `store_dir` and waits up
/// to `timeout` for its answer. If none came, the request is withdrawn
/// (nothing was changed); if the agent had already taken it, its answer is
/// awaited a little longer, then the outcome is reported as unknown.
pub fn send(store_dir: &Path, edit: &Edit, timeout: Duration) -> Result<Edited, AgentError> {
    let dir = inbox_dir(store_dir);
    fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let id = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
    let bytes = serde_json::to_vec(&Request { edit: edit.clone() })
        .map_err(|e| AgentError::Edit(format!("cannot encode the edit: {e}")))?;
    write_atomic(&dir, &format!("{id}{REQUEST}"), &bytes)?;
    let answer = dir.join(format!("{id}{RESPONSE}"));
    if let Some(response) = wait_for(&answer, Instant::now() + timeout)? {
        return Ok(response.result?);
    }
    let request = dir.join(format!("{id}{REQUEST}"));
    match fs::remove_file(&request) {
        Ok(()) => {
            return Err(AgentError::Edit(format!(
                "the agent holding {} did not take the edit within {}: withdrawn, nothing was changed",
                store_dir.display(),
                humantime::format_duration(timeout)
            )))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io(&request, e)),
    }
    match wait_for(&answer, Instant::now() + CLAIMED_GRACE)? {
        Some(response) => Ok(response.result?),
        None => Err(AgentError::Edit(format!(
            "the agent took the edit but did not answer in time: it may or may not be made \
             (look with fleet-agent inspect --data-dir {})",
            store_dir.display()
        ))),
    }
}

/// Reads and removes the answer at `path` once it exists; `None` at `deadline`.
fn wait_for(path: &Path, deadline: Instant) -> Result<Option<Response>, AgentError> {
    loop {
        match fs::read(path) {
            Ok(bytes) => {
                let response = serde_json::from_slice(&bytes)
                    .map_err(|e| AgentError::Edit(format!("unreadable answer {}: {e}", path.display())))?;
                fs::remove_file(path).map_err(|e| io(path, e))?;
                return Ok(Some(response));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io(path, e)),
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(ANSWER_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::embedded::{EditOutcome, SimConfig};
    use crate::targets::{ResourceId, Target};
    use serde_json::json;

    fn namespace(name: &str) -> Edit {
        let object =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}));
        Edit::Apply { object: Box::new(object.unwrap()) }
    }

    fn ns_id(name: &str) -> ResourceId {
        ResourceId {
            group: "".into(),
            version: "v1".into(),
            kind: "Namespace".into(),
            namespace: "".into(),
            name: name.into(),
        }
    }

    #[tokio::test]
    async fn a_request_is_claimed_applied_through_the_target_and_answered() {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        let server = tokio::spawn(serve(target.clone()));
        let store = dir.path().to_path_buf();
        let edited = tokio::task::spawn_blocking(move || send(&store, &namespace("demo"), Duration::from_secs(10)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(edited.outcome, EditOutcome::Created);
        assert!(target.get(&ns_id("demo")).await.unwrap().is_some(), "the agent's own records have it");
        // Refusals travel back as the target's errors.
        let store = dir.path().to_path_buf();
        let refused = tokio::task::spawn_blocking(move || {
            send(&store, &Edit::Delete { id: ns_id("kube-system") }, Duration::from_secs(10))
        })
        .await
        .unwrap();
        assert!(matches!(refused, Err(AgentError::Target(TargetError::Invalid(m))) if m.contains("forbidden")));
        // The agent removes a claimed request only after writing its answer
        // (so a crash between the two loses no answer): the client can have
        // its answer a moment before the claim is gone.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let left = loop {
            let left: Vec<_> = fs::read_dir(inbox_dir(dir.path())).unwrap().collect();
            if left.is_empty() || tokio::time::Instant::now() >= deadline {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        server.abort();
        assert!(left.is_empty(), "every file collected: {left:?}");
    }

    #[test]
    fn an_unanswered_request_is_withdrawn_and_a_claimed_one_is_served_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        let e = send(dir.path(), &namespace("demo"), Duration::from_millis(100)).unwrap_err().to_string();
        assert!(e.contains("withdrawn, nothing was changed"), "{e}");
        let inbox = inbox_dir(dir.path());
        assert_eq!(fs::read_dir(&inbox).unwrap().count(), 0);
        assert_eq!(serve_once(&target, &inbox, false).unwrap(), 0);

        // An agent that stopped after claiming: the next one serves the request on its first look.
        let bytes = serde_json::to_vec(&Request { edit: namespace("resumed") }).unwrap();
        fs::write(inbox.join(format!("x{CLAIMED}")), bytes).unwrap();
        assert_eq!(serve_once(&target, &inbox, false).unwrap(), 0, "only on the first look");
        assert_eq!(serve_once(&target, &inbox, true).unwrap(), 1);
        let answer: Response = serde_json::from_slice(&fs::read(inbox.join(format!("x{RESPONSE}"))).unwrap()).unwrap();
        assert_eq!(answer.result.unwrap().outcome, EditOutcome::Created);
        assert!(!inbox.join(format!("x{CLAIMED}")).exists());

        // A garbled request is answered with an error, not dropped.
        fs::write(inbox.join(format!("y{REQUEST}")), b"{").unwrap();
        serve_once(&target, &inbox, false).unwrap();
        let answer: Response = serde_json::from_slice(&fs::read(inbox.join(format!("y{RESPONSE}"))).unwrap()).unwrap();
        assert!(matches!(answer.result, Err(TargetError::Invalid(m)) if m.contains("unreadable edit request")));
    }

    #[test]
    fn answers_travel_as_json() {
        let response = Response { result: Err(TargetError::Conflict("taken".into())) };
        let text = serde_json::to_string(&response).unwrap();
        assert_eq!(text, r#"{"result":{"Err":{"reason":"Conflict","message":"taken"}}}"#);
        assert_eq!(serde_json::from_str::<Response>(&text).unwrap(), response);
    }
}
