//! The same kubectl sequences against a real kube-apiserver (`RealCluster`,
//! with KubeFleet's and OCM's published CRDs for Fleet's kinds) and against
//! the hub (`KubeHub`), compared step by step: exit codes, the reason and
//! message kubectl prints for a refusal, and the resulting objects once
//! normalised (see [`normalise`] for what is set aside and why). Where the
//! hub differs on purpose, the difference is listed in
//! docs/kubernetes-api-differences.md and asserted here as such.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use fleet_tests::kube::{kubectl_binary, KubeHub};
use fleet_tests::realkube::RealCluster;
use serde_json::{json, Value};

const CRP_CRD: &str = "clusterresourceplacements.placement.kubernetes-fleet.io";
const PLACEMENT_CRD: &str = "placements.cluster.open-cluster-management.io";
/// The version both serve (KubeFleet's CRD prefers v1, which the hub does not serve).
const CRP_V1BETA1: &str = "clusterresourceplacements.v1beta1.placement.kubernetes-fleet.io";

/// What one kubectl run ended with.
#[derive(Debug, Clone)]
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// One API server as kubectl reaches it.
struct Side {
    label: &'static str,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Side {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(["--request-timeout", "30s"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Outcome {
        let mut child = self
            .command(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .spawn()
            .expect("spawn kubectl");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes()).expect("write kubectl's stdin");
        }
        let out = child.wait_with_output().expect("kubectl output");
        Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        }
    }

    /// Starts a long-running kubectl whose stdout lines arrive as they come.
    fn stream(&self, args: &[&str]) -> Lines {
        let mut child = self.command(args).stdin(Stdio::null()).spawn().expect("spawn kubectl");
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        Lines { child, rx }
    }
}

/// The output lines of a running kubectl; it is killed on drop.
struct Lines {
    child: Child,
    rx: Receiver<String>,
}

impl Lines {
    /// Every line up to and including the first satisfying `last`.
    fn until(&mut self, what: &str, last: impl Fn(&str) -> bool) -> Vec<String> {
        let timeout = Duration::from_secs(30);
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    let done = last(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => panic!("timed out after {timeout:?} waiting for {what}; lines seen: {seen:#?}"),
            }
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real cluster and a hub, driven with the same commands.
struct Pair {
    _real: RealCluster,
    _hub: KubeHub,
    sides: [Side; 2],
}

impl Pair {
    /// Starts both (the real control plane on a blocking thread meanwhile)
    /// and installs the CRDs `crds` on the real one.
    async fn start(name: &str, crds: &'static [&'static str]) -> Pair {
        let name = name.to_string();
        let real = tokio::task::spawn_blocking(move || {
            let real = RealCluster::start(&name);
            if !crds.is_empty() {
                real.install_crds(crds);
            }
            real
        });
        let hub = KubeHub::start().await;
        let real = real.await.expect("the real cluster started");
        let sides = [
            Side {
                label: "kube-apiserver",
                kubeconfig: real.kubeconfig.clone(),
                cache: real.dir.path().join("diff-cache"),
            },
            Side { label: "hub", kubeconfig: hub.admin.clone(), cache: hub.hub.dir.path().join("diff-cache") },
        ];
        let pair = Pair { _real: real, _hub: hub, sides };
        pair.same("create the test namespace", &["create", "-f", "-"], Some(NAMESPACE));
        pair
    }

    fn real(&self) -> &Side {
        &self.sides[0]
    }

    fn hub(&self) -> &Side {
        &self.sides[1]
    }

    /// Runs the command on both; their outcomes (real, hub).
    fn both(&self, args: &[&str], stdin: Option<&str>) -> (Outcome, Outcome) {
        (self.real().run(args, stdin), self.hub().run(args, stdin))
    }

    /// Runs the command on both and asserts the same exit code and, once
    /// normalised, the same output on both streams; the hub's outcome.
    fn same(&self, step: &str, args: &[&str], stdin: Option<&str>) -> Outcome {
        let (real, hub) = self.both(args, stdin);
        let hub_stderr = same_shape(&real.stderr, &hub.stderr);
        let seen = |o: &Outcome, stderr: &str| (o.code, text(&o.stdout), text(stderr));
        assert_eq!(
            seen(&real, &real.stderr),
            seen(&hub, &hub_stderr),
            "{step}: kubectl {} differs (left: {}, right: {})",
            args.join(" "),
            self.real().label,
            self.hub().label
        );
        hub
    }

    /// Runs the command on both and asserts both refuse it, kubectl's
    /// report starting alike up to `common` (the reason, object and field);
    /// the wording after it is the documented difference. (real, hub).
    fn refused_alike(&self, step: &str, args: &[&str], stdin: Option<&str>, common: &str) -> (Outcome, Outcome) {
        let (real, hub) = self.both(args, stdin);
        for (side, outcome) in [("kube-apiserver", &real), ("hub", &hub)] {
            assert!(
                outcome.code == 1 && outcome.stderr.starts_with(common),
                "{step}: kubectl {} on the {side} should refuse with {common:?}...: {outcome:?}",
                args.join(" ")
            );
        }
        (real, hub)
    }

    /// Runs the command on both, asserts both succeed, and asserts the
    /// objects they print (`-o json`) are the same once normalised.
    fn same_object(&self, step: &str, args: &[&str], stdin: Option<&str>) -> Value {
        let (real, hub) = self.both(args, stdin);
        assert!(real.code == 0 && hub.code == 0, "{step}: kubectl {}:\nreal: {real:?}\nhub: {hub:?}", args.join(" "));
        let (mut real, mut hub) = (real.json(), hub.json());
        set_aside_documented(&mut real, &mut hub);
        let (real, hub) = (normalise(real), normalise(hub));
        assert_eq!(real, hub, "{step}: kubectl {} (left: kube-apiserver, right: hub)", args.join(" "));
        hub
    }
}

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: diff\n  labels: {team: a}\n";

/// A ConfigMap in namespace `diff`.
fn configmap(name: &str, mode: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: diff\ndata:\n  mode: {mode:?}\n  size: \"1\"\n")
}

/// The hub's stderr with what the docs list as its own addition set
/// aside: a refusal's message may go on with a parenthesised detail
/// (which version a conflicting write met, what to use instead) after the
/// words Kubernetes uses.
fn same_shape(real: &str, hub: &str) -> String {
    let real_lines: Vec<&str> = real.lines().collect();
    let mut out = String::new();
    for (i, line) in hub.lines().enumerate() {
        let kept = match real_lines.get(i) {
            Some(r) if line.len() > r.len() && line.starts_with(r) && line[r.len()..].starts_with(" (") => r,
            _ => line,
        };
        out.push_str(kept);
        out.push('\n');
    }
    out
}

/// kubectl output with what differs by construction masked: resource
/// versions and uids (each server assigns its own), and the age column.
fn text(output: &str) -> String {
    let mut out = String::new();
    for line in output.lines() {
        let mut words = Vec::new();
        for word in line.split(' ') {
            let masked = if word.len() == 36 && word.matches('-').count() == 4 {
                "<uid>".to_string()
            } else if let Some(rest) = word.strip_prefix("resourceVersion=") {
                format!("resourceVersion=<{}>", rest.chars().all(|c| c.is_ascii_digit()))
            } else {
                word.to_string()
            };
            words.push(masked);
        }
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// An object (or list) with what cannot match set aside:
/// - `uid`, `creationTimestamp`, `resourceVersion`: each server assigns its
///   own (a uuid, its clock, etcd's revision against the hub's Raft index);
/// - `managedFields[].time`: the servers' clocks;
/// - a list's `resourceVersion` and `continue` token: opaque, server-made;
/// - the `status` of Fleet's kinds: the hub runs Fleet's controllers, the
///   real cluster only has their CRDs (no controller writes a status).
fn normalise(mut value: Value) -> Value {
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            *item = normalise(item.take());
        }
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            if let Some(token) = meta.get_mut("continue") {
                *token = json!("<token>");
            }
        }
        return value;
    }
    let fleet_kind = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.contains("kubernetes-fleet.io") || v.contains("open-cluster-management.io"));
    if fleet_kind {
        if let Some(object) = value.as_object_mut() {
            object.remove("status");
        }
    }
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "creationTimestamp", "resourceVersion"] {
            meta.remove(key);
        }
        if let Some(entries) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
            for entry in entries.iter_mut() {
                if let Some(entry) = entry.as_object_mut() {
                    entry.remove("time");
                }
            }
        }
    }
    value
}

fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default().to_string(),
                e["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn get_json<'a>(kind: &'a str, name: &'a str) -> [&'a str; 8] {
    ["get", kind, name, "-n", "diff", "--show-managed-fields", "-o", "json"]
}

/// Client-side apply, then server-side apply of a changed value: kubectl's
/// migration of the client-side fields to its server-side manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_apply_migrates_to_server_side_apply() {
    let pair = Pair::start("diff-migrate", &[]).await;
    let applied = pair.same("client-side apply creates", &["apply", "-f", "-"], Some(&configmap("app", "blue")));
    assert_eq!(applied.stdout.trim(), "configmap/app created");
    pair.same("client-side apply changes", &["apply", "-f", "-"], Some(&configmap("app", "green")));
    let object = pair.same_object("after client-side apply", &get_json("configmap", "app"), None);
    assert_eq!(managers(&object), vec![("kubectl-client-side-apply".to_string(), "Update".to_string())]);

    let ssa = pair.same(
        "server-side apply of a changed value takes the client-side fields over",
        &["apply", "--server-side", "-f", "-"],
        Some(&configmap("app", "red")),
    );
    assert_eq!(ssa.stdout.trim(), "configmap/app serverside-applied");
    let object = pair.same_object("after the migration", &get_json("configmap", "app"), None);
    assert_eq!(object["data"]["mode"], "red");
    pair.same("client-side apply again", &["apply", "-f", "-"], Some(&configmap("app", "green")));
    pair.same_object("after going back to client-side apply", &get_json("configmap", "app"), None);
}

/// Kinds for which Kubernetes keeps no `metadata.generation`.
const UNGENERATED: &[&str] = &["ConfigMap", "Secret", "Namespace"];

/// Asserts, then removes, the differences docs/kubernetes-api-differences.md
/// lists as deliberate, in an object or list from each side:
/// - the hub counts `metadata.generation` for every kind, Kubernetes not for
///   ConfigMaps, Secrets and Namespaces;
/// - the hub's managedFields name leaf fields only: no `"."` entry for a map
///   an Update created.
fn set_aside_documented(real: &mut Value, hub: &mut Value) {
    if let (Some(real), Some(hub)) = (real.get_mut("items"), hub.get_mut("items")) {
        if let (Some(real), Some(hub)) = (real.as_array_mut(), hub.as_array_mut()) {
            for (r, h) in real.iter_mut().zip(hub.iter_mut()) {
                // Kubernetes leaves a built-in kind's list items without
                // apiVersion and kind; the hub's items always carry them.
                let kind = h["kind"].clone();
                if r.get("kind").is_none() {
                    for key in ["apiVersion", "kind"] {
                        let field = h.as_object_mut().and_then(|o| o.remove(key));
                        assert!(field.is_some(), "the hub's list items name their {key}: {h}");
                    }
                }
                set_aside_documented_as(r, h, kind.as_str().unwrap_or_default());
            }
        }
        return;
    }
    let kind = real["kind"].as_str().unwrap_or_default().to_string();
    set_aside_documented_as(real, hub, &kind);
}

/// [`set_aside_documented`] for one object of `kind`.
fn set_aside_documented_as(real: &mut Value, hub: &mut Value, kind: &str) {
    let kind = kind.to_string();
    if UNGENERATED.contains(&kind.as_str()) {
        assert!(real.pointer("/metadata/generation").is_none(), "a real {kind} has no generation: {real}");
        assert!(
            hub.pointer("/metadata/generation").is_some_and(Value::is_u64),
            "the hub's {kind} counts generations: {hub}"
        );
        if let Some(meta) = hub.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("generation");
        }
    }
    if kind == "ClusterResourcePlacement" {
        set_aside_fleet_defaults(real, hub);
    }
    if kind == "Placement" {
        // OCM's defaults, which the hub applies on admission (the CRD does not).
        only_in(hub, real, "/spec/prioritizerPolicy/mode", json!("Additive"));
        only_in(hub, real, "/spec/decisionStrategy/groupStrategy/clustersPerDecisionGroup", json!("100%"));
    }
    if kind == "Namespace" {
        // Both add the name label and the `kubernetes` finalizer; the hub
        // keeps no phase, and records no owner for the label (it defaults
        // after field tracking).
        only_in(real, hub, "/status/phase", json!("Active"));
        if let Some(entries) = real.pointer_mut("/metadata/managedFields").and_then(Value::as_array_mut) {
            for entry in entries.iter_mut() {
                if let Some(labels) = entry.pointer_mut("/fieldsV1/f:metadata/f:labels").and_then(Value::as_object_mut)
                {
                    labels.remove("f:kubernetes.io/metadata.name");
                }
            }
        }
    }
    for (side, value) in [("hub", &mut *hub), ("kube-apiserver", &mut *real)] {
        let object = value.clone();
        let Some(entries) = value.pointer_mut("/metadata/managedFields").and_then(Value::as_array_mut) else {
            continue;
        };
        for entry in entries.iter_mut() {
            let had = strip_dots(&mut entry["fieldsV1"], &object);
            if side == "hub" {
                assert!(!had, "the hub's managedFields list leaf fields only: {entry}");
            }
        }
        // Kubernetes orders entries by time in whole seconds (then manager):
        // which of two entries made in neighbouring seconds comes first is timing.
        // An entry that owned only maps owns nothing the hub would record.
        entries.retain(|e| e["fieldsV1"].as_object().is_some_and(|m| !m.is_empty()));
        entries.sort_by_key(|e| (e["operation"].to_string(), e["manager"].to_string()));
    }
}

/// Asserts that `has` holds `expected` at `pointer` where `lacks` has
/// nothing, and removes it (with the maps it leaves empty that `lacks` does
/// not have either).
fn only_in(has: &mut Value, lacks: &Value, pointer: &str, expected: Value) {
    assert!(lacks.pointer(pointer).is_none(), "{pointer} is documented as set on one side only: {lacks}");
    assert_eq!(has.pointer(pointer), Some(&expected), "{pointer} (documented difference) in {has}");
    let mut path: Vec<&str> = pointer.split('/').skip(1).collect();
    while let Some(last) = path.pop() {
        let parent = format!("/{}", path.join("/"));
        let parent = if path.is_empty() { "" } else { parent.as_str() };
        let Some(map) = has.pointer_mut(parent).and_then(Value::as_object_mut) else { return };
        map.remove(&last.replace("~1", "/").replace("~0", "~"));
        let emptied = map.is_empty() && !path.is_empty() && lacks.pointer(parent).is_none();
        if !emptied {
            return;
        }
    }
}

/// KubeFleet defaults a placement's rollout strategy and each selector's
/// scope in its controllers and webhook; the hub does it on admission, the
/// CRD alone does not. The CRD's own schema defaults (revisionHistoryLimit,
/// statusReportingScope) are stored by both, but Kubernetes counts them as set by the writer and
/// the hub as set by no manager.
fn set_aside_fleet_defaults(real: &mut Value, hub: &mut Value) {
    if real.pointer("/spec/strategy").is_none() {
        let defaulted = hub["spec"].as_object_mut().and_then(|s| s.remove("strategy"));
        let expected = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%", "unavailablePeriodSeconds": 60}});
        assert_eq!(defaulted, Some(expected), "the hub defaults a placement's strategy");
    }
    let real_selectors = real.pointer("/spec/resourceSelectors").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(hub_selectors) = hub.pointer_mut("/spec/resourceSelectors").and_then(Value::as_array_mut) {
        for (i, selector) in hub_selectors.iter_mut().enumerate() {
            if real_selectors.get(i).is_some_and(|r| r.get("selectionScope").is_none()) {
                let scope = selector.as_object_mut().and_then(|s| s.remove("selectionScope"));
                assert_eq!(scope, Some(json!("NamespaceWithResources")), "the hub defaults a selector's scope");
            }
        }
    }
    if let Some(entries) = real.pointer_mut("/metadata/managedFields").and_then(Value::as_array_mut) {
        for entry in entries.iter_mut() {
            if let Some(spec) = entry.pointer_mut("/fieldsV1/f:spec").and_then(Value::as_object_mut) {
                spec.remove("f:revisionHistoryLimit");
                spec.remove("f:statusReportingScope");
            }
        }
    }
}

/// Removes from a FieldsV1 value what owns a map rather than a leaf of
/// `object`: `"."` entries, and a map's path listed without children; whether
/// there was any.
fn strip_dots(fields: &mut Value, object: &Value) -> bool {
    let Some(map) = fields.as_object_mut() else { return false };
    let mut had = map.remove(".").is_some();
    let mut containers = Vec::new();
    for (key, child) in map.iter_mut() {
        let value = key.strip_prefix("f:").and_then(|name| object.get(name)).unwrap_or(&Value::Null);
        had |= strip_dots(child, value);
        if child.as_object().is_some_and(serde_json::Map::is_empty) && value.as_object().is_some_and(|m| !m.is_empty())
        {
            containers.push(key.clone());
        }
    }
    had |= !containers.is_empty();
    for key in containers {
        map.remove(&key);
    }
    had
}

const CRP: &str = "apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: web
  labels: {app: web}
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: diff}
  policy:
    placementType: PickN
    numberOfClusters: 2
";

fn crp(clusters: u32, extra: &str) -> String {
    CRP.replace("numberOfClusters: 2", &format!("numberOfClusters: {clusters}{extra}"))
}

const PLACEMENT: &str = "apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: east
  namespace: diff
spec:
  numberOfClusters: 1
  clusterSets: [default]
";

/// Two field managers on one ConfigMap and one ClusterResourcePlacement:
/// the conflict, its message, `--force-conflicts`, and server-side dry runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_conflicts_force_and_dry_run() {
    let pair = Pair::start("diff-conflicts", &[CRP_CRD]).await;
    let ssa = |manager: &'static str| ["apply", "--server-side", "--field-manager", manager, "-f", "-"];
    pair.same("alpha applies", &ssa("alpha"), Some(&configmap("owned", "blue")));
    pair.same("alpha applies the same again", &ssa("alpha"), Some(&configmap("owned", "blue")));
    pair.same("beta agrees on every value: no conflict", &ssa("beta"), Some(&configmap("owned", "blue")));
    let refused = pair.same("beta changes alpha's value", &ssa("beta"), Some(&configmap("owned", "red")));
    assert!(refused.code != 0 && refused.stderr.contains("conflict"), "{refused:?}");
    let dry = ["apply", "--server-side", "--field-manager", "beta", "--force-conflicts", "--dry-run=server", "-f", "-"];
    pair.same("a forced dry run", &dry, Some(&configmap("owned", "red")));
    let object = pair.same_object("the dry run stored nothing", &get_json("configmap", "owned"), None);
    assert_eq!(object["data"]["mode"], "blue");
    let forced = ["apply", "--server-side", "--field-manager", "beta", "--force-conflicts", "-f", "-"];
    pair.same("beta forces", &forced, Some(&configmap("owned", "red")));
    let object = pair.same_object("after forcing", &get_json("configmap", "owned"), None);
    assert_eq!(object["data"]["mode"], "red");
    pair.same(
        "alpha drops a field beta shares",
        &ssa("alpha"),
        Some(&configmap("owned", "red").replace("  size: \"1\"\n", "")),
    );
    pair.same_object("the shared field stays", &get_json("configmap", "owned"), None);

    pair.same("alpha applies a placement", &ssa("alpha"), Some(&crp(2, "")));
    let crp_json = ["get", CRP_V1BETA1, "web", "--show-managed-fields", "-o", "json"];
    pair.same_object("the applied placement", &crp_json, None);
    // Both refuse on the changed count; Kubernetes also names the selectors,
    // whose CRD-defaulted `selectionScope` the applied list lacks
    // (docs/kubernetes-api-differences.md).
    let (real, hub) =
        pair.refused_alike("beta changes its policy", &ssa("beta"), Some(&crp(3, "")), "error: Apply failed with ");
    for outcome in [&real, &hub] {
        assert!(outcome.stderr.contains(".spec.policy.numberOfClusters"), "{outcome:?}");
    }
    assert!(real.stderr.contains("- .spec.resourceSelectors"), "{real:?}");
    pair.same("beta forces its policy", &forced, Some(&crp(3, "")));
    // Forcing moves the selectors to beta in Kubernetes; on the hub, where
    // they were no conflict, alpha keeps sharing them.
    let (real, hub) = pair.both(&crp_json, None);
    let (mut real, mut hub) = (real.json(), hub.json());
    set_aside_documented(&mut real, &mut hub);
    let alpha = hub.pointer_mut("/metadata/managedFields/0/fieldsV1/f:spec").and_then(Value::as_object_mut);
    assert!(alpha.and_then(|spec| spec.remove("f:resourceSelectors")).is_some(), "alpha shares the selectors: {hub}");
    assert_eq!(normalise(real), normalise(hub), "the forced placement (left: kube-apiserver, right: hub)");
    pair.same("a dry-run create", &["create", "--dry-run=server", "-f", "-"], Some(&configmap("never", "x")));
    pair.same("nothing was created", &["get", "configmap", "never", "-n", "diff"], None);
}

/// Merge, strategic-merge and JSON patches; a replace from a stale
/// version; a `get -o yaml` round trip; deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_replace_round_trip_and_delete() {
    let pair = Pair::start("diff-patches", &[CRP_CRD]).await;
    pair.same("create", &["create", "-f", "-"], Some(&configmap("app", "blue")));
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: diff\ntype: Opaque\nstringData:\n  user: admin\ndata:\n  pass: c2VjcmV0\n";
    pair.same("create a secret with stringData", &["create", "-f", "-"], Some(secret));
    pair.same_object("the secret", &get_json("secret", "token"), None);
    pair.same("create a placement", &["create", "-f", "-"], Some(&crp(2, "")));
    pair.same("create it again", &["create", "-f", "-"], Some(&crp(2, "")));

    let patches: [(&str, &str); 3] = [
        ("merge", r#"{"data":{"mode":"green","extra":"x"}}"#),
        ("strategic", r#"{"data":{"extra":null},"metadata":{"labels":{"p":"q"}}}"#),
        (
            "json",
            r#"[{"op":"replace","path":"/data/mode","value":"red"},{"op":"add","path":"/data/size","value":"2"}]"#,
        ),
    ];
    for (kind, body) in patches {
        pair.same(
            &format!("{kind} patch"),
            &["patch", "configmap", "app", "-n", "diff", "--type", kind, "-p", body],
            None,
        );
        pair.same_object(&format!("after the {kind} patch"), &get_json("configmap", "app"), None);
    }
    // A JSON patch whose test fails: the same refusal; the hub says which operation failed.
    let (_, hub) = pair.refused_alike(
        "a failed JSON patch test",
        &[
            "patch",
            "configmap",
            "app",
            "-n",
            "diff",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/data/mode","value":"blue"}]"#,
        ],
        None,
        "The request is invalid: ",
    );
    assert!(hub.stderr.contains("the JSON patch could not be applied"), "{hub:?}");
    pair.same_object("after the failed patch", &get_json("configmap", "app"), None);
    let crp_json = ["get", CRP_V1BETA1, "web", "--show-managed-fields", "-o", "json"];
    for (kind, body) in [
        ("merge", r#"{"spec":{"policy":{"numberOfClusters":3}}}"#),
        ("json", r#"[{"op":"replace","path":"/spec/policy/numberOfClusters","value":4}]"#),
        ("strategic", r#"{"spec":{"policy":{"numberOfClusters":5}}}"#),
    ] {
        pair.same(
            &format!("{kind} patch of a placement"),
            &["patch", CRP_V1BETA1, "web", "--type", kind, "-p", body],
            None,
        );
        pair.same_object(&format!("the placement after a {kind} patch"), &crp_json, None);
    }

    // A replace that names an older resourceVersion is refused.
    let (real_old, hub_old) = pair.both(&["get", "configmap", "app", "-n", "diff", "-o", "json"], None);
    pair.same(
        "a change in between",
        &["patch", "configmap", "app", "-n", "diff", "-p", r#"{"data":{"mode":"new"}}"#],
        None,
    );
    let stale = |old: &Outcome| {
        let mut object = old.json();
        object["data"]["mode"] = json!("stale");
        object.to_string()
    };
    let (real, hub) = (
        pair.real().run(&["replace", "-f", "-"], Some(&stale(&real_old))),
        pair.hub().run(&["replace", "-f", "-"], Some(&stale(&hub_old))),
    );
    let hub_stderr = same_shape(&real.stderr, &hub.stderr);
    assert_eq!((real.code, text(&real.stderr)), (hub.code, text(&hub_stderr)), "replace from a stale version");
    assert!(hub.stderr.contains("Error from server (Conflict)"), "{hub:?}");

    // get -o yaml, then replace with exactly that: accepted, nothing changes.
    let (real_yaml, hub_yaml) = pair.both(&["get", "configmap", "app", "-n", "diff", "-o", "yaml"], None);
    let (real, hub) = (
        pair.real().run(&["replace", "-f", "-"], Some(&real_yaml.stdout)),
        pair.hub().run(&["replace", "-f", "-"], Some(&hub_yaml.stdout)),
    );
    assert_eq!((real.code, text(&real.stdout), text(&real.stderr)), (hub.code, text(&hub.stdout), text(&hub.stderr)));
    pair.same_object("after the round trip", &get_json("configmap", "app"), None);

    pair.same("delete", &["delete", "configmap", "app", "-n", "diff"], None);
    pair.same("get after delete", &["get", "configmap", "app", "-n", "diff"], None);
    pair.same("delete again", &["delete", "configmap", "app", "-n", "diff"], None);
    pair.same("delete the placement", &["delete", CRP_V1BETA1, "web", "--wait=true"], None);
}

/// Lists in pages and by selectors, and a watch from a list's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_select_and_watch() {
    let pair = Pair::start("diff-lists", &[]).await;
    let mut many = String::new();
    for i in 0..5 {
        let tier = if i % 2 == 0 { "web" } else { "db" };
        many.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: diff\n  labels: {{set: diff, tier: {tier}}}\ndata:\n  mode: m{i}\n"
        ));
    }
    pair.same("create five", &["create", "-f", "-"], Some(&many));
    for args in [
        vec!["get", "configmaps", "-n", "diff", "-l", "set=diff", "-o", "name", "--chunk-size", "2"],
        vec!["get", "configmaps", "-n", "diff", "-l", "set=diff,tier!=db", "-o", "name"],
        vec!["get", "configmaps", "-n", "diff", "-l", "tier in (db)", "-o", "name"],
        vec!["get", "configmaps", "-n", "diff", "--field-selector", "metadata.name=cm-3", "-o", "name"],
        vec![
            "get",
            "configmaps",
            "-n",
            "diff",
            "-l",
            "set=diff",
            "--field-selector",
            "metadata.name!=cm-3",
            "-o",
            "name",
        ],
        vec!["get", "namespaces", "--field-selector", "metadata.name=diff", "-o", "name"],
    ] {
        pair.same("a list", &args, None);
    }
    // A selector that does not parse: the same refusal, the hub's own words on the grammar.
    let (real, hub) = pair.refused_alike(
        "a selector that does not parse",
        &["get", "configmaps", "-n", "diff", "-l", "set in (", "-o", "name"],
        None,
        "Error from server (BadRequest): Unable to find \"/v1, Resource=configmaps\" that match label selector \"set in (\", field selector \"\": ",
    );
    assert!(real.stderr.contains("unable to parse requirement"), "{real:?}");
    assert!(hub.stderr.contains("unable to parse label selector"), "{hub:?}");
    // limit and continue, page by page.
    let first = pair.same_object(
        "the first page",
        &["get", "--raw", "/api/v1/namespaces/diff/configmaps?labelSelector=set%3Ddiff&limit=2"],
        None,
    );
    assert_eq!(first["items"].as_array().map(Vec::len), Some(2), "{first}");
    let (real_page, hub_page) =
        pair.both(&["get", "--raw", "/api/v1/namespaces/diff/configmaps?labelSelector=set%3Ddiff&limit=2"], None);
    let next = |page: &Outcome| {
        let token = page.json()["metadata"]["continue"].as_str().unwrap_or_default().to_string();
        format!("/api/v1/namespaces/diff/configmaps?labelSelector=set%3Ddiff&limit=2&continue={token}")
    };
    let (real_second, hub_second) = (
        pair.real().run(&["get", "--raw", &next(&real_page)], None),
        pair.hub().run(&["get", "--raw", &next(&hub_page)], None),
    );
    let (mut real_second, mut hub_second) = (real_second.json(), hub_second.json());
    set_aside_documented(&mut real_second, &mut hub_second);
    assert_eq!(normalise(real_second), normalise(hub_second), "the second page");
    // A field Kubernetes does not index for ConfigMaps.
    // Documented: the hub selects by any field, Kubernetes only by those it indexes.
    let (real, hub) =
        pair.both(&["get", "configmaps", "-n", "diff", "--field-selector", "data.mode=m1", "-o", "name"], None);
    assert!(real.code == 1 && real.stderr.contains("\"data.mode\" is not a known field selector"), "{real:?}");
    assert_eq!((hub.code, hub.stdout.as_str()), (0, "configmap/cm-1\n"), "{hub:?}");

    // Watch from the list's version, with bookmarks allowed.
    let list = |side: &Side| {
        side.run(&["get", "--raw", "/api/v1/namespaces/diff/configmaps?labelSelector=set%3Ddiff"], None).json()
    };
    let watch = |side: &Side| {
        let version = list(side)["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
        let path = format!(
            "/api/v1/namespaces/diff/configmaps?labelSelector=set%3Ddiff&watch=1&allowWatchBookmarks=true&resourceVersion={version}"
        );
        (side.stream(&["get", "--raw", &path]), version)
    };
    let mut streams = [watch(pair.real()), watch(pair.hub())];
    pair.same("a change", &["patch", "configmap", "cm-1", "-n", "diff", "-p", r#"{"data":{"mode":"changed"}}"#], None);
    pair.same(
        "a new one",
        &["create", "-f", "-"],
        Some(&configmap("cm-9", "new").replace("namespace: diff\n", "namespace: diff\n  labels: {set: diff}\n")),
    );
    pair.same("leaving the selection", &["label", "configmap", "cm-0", "-n", "diff", "set-"], None);
    pair.same("a delete", &["delete", "configmap", "cm-9", "-n", "diff"], None);
    let events: Vec<Vec<(String, String)>> = streams
        .iter_mut()
        .map(|(stream, _)| {
            let lines = stream.until("the delete", |l| l.contains("\"DELETED\"") && l.contains("cm-9"));
            lines
                .iter()
                .filter_map(|l| {
                    let event: Value = serde_json::from_str(l).ok()?;
                    let object = &event["object"];
                    let version = object["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
                    if event["type"] == "BOOKMARK" {
                        assert!(!version.is_empty(), "a bookmark names its version: {l}");
                        return None;
                    }
                    Some((
                        format!("{} {} {}", event["type"], object["metadata"]["name"], object["data"]["mode"]),
                        version,
                    ))
                })
                .collect()
        })
        .collect();
    // Documented: resuming from N, the hub replays the events of Raft entry
    // N itself (one entry can write several objects at version N), here the
    // list's last create; Kubernetes starts after N.
    let (real_events, mut hub_events) = (events[0].clone(), events[1].clone());
    let hub_version = &streams[1].1;
    let replayed: Vec<_> = hub_events.iter().take_while(|(_, v)| v == hub_version).cloned().collect();
    assert_eq!(replayed.len(), 1, "the hub replays entry {hub_version}: {hub_events:?}");
    hub_events.drain(..replayed.len());
    let shown = |events: &[(String, String)]| events.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>();
    assert_eq!(shown(&real_events), shown(&hub_events), "watch events (left: kube-apiserver, right: hub)");

    // The official Python client: pages by limit and continue, creates, and
    // watches from a list's version until its own object arrives.
    let (real, hub) = (python_client(pair.real()), python_client(pair.hub()));
    assert_eq!(real, hub, "the Python client (left: kube-apiserver, right: hub)");
    // (How many pages differs: a real namespace also holds kube-root-ca.crt,
    // so Kubernetes, which pages over stored objects before selecting,
    // hands out one more continue token, to an empty page.)
    assert_eq!(
        real.first().map(String::as_str),
        Some(r#"{"largest page": 2, "names": ["cm-1", "cm-2", "cm-3", "cm-4"]}"#)
    );
}

/// Runs the Python client's sequence against one side; its output lines.
fn python_client(side: &Side) -> Vec<String> {
    const SCRIPT: &str = r#"
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
names, largest, token = [], 0, None
while True:
    page = v1.list_namespaced_config_map("diff", label_selector="set=diff", limit=2, _continue=token)
    largest = max(largest, len(page.items))
    names += [item.metadata.name for item in page.items]
    token = page.metadata._continue
    if not token:
        break
print(json.dumps({"largest page": largest, "names": names}), flush=True)
version = v1.list_namespaced_config_map("diff", label_selector="set=diff").metadata.resource_version
meta = client.V1ObjectMeta(name="py-new", labels={"set": "diff"})
v1.create_namespaced_config_map("diff", client.V1ConfigMap(metadata=meta, data={"mode": "py"}))
stream = watch.Watch()
for event in stream.stream(v1.list_namespaced_config_map, "diff", label_selector="set=diff",
                           resource_version=version, allow_watch_bookmarks=True, timeout_seconds=30):
    if event["type"] != "BOOKMARK" and event["object"].metadata.name == "py-new":
        print(json.dumps({"type": event["type"], "data": event["object"].data}), flush=True)
        stream.stop()
"#;
    fleet_tests::kube::require_python_client();
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(&side.kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("python3 (the official client: pip install kubernetes)");
    assert!(out.status.success(), "the Python client on {}: {}", side.label, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// fieldValidation Strict and Warn on built-in and Fleet kinds, and the
/// objects of Fleet's and OCM's kinds as each server stores them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_and_fleet_kinds() {
    let pair = Pair::start("diff-validation", &[CRP_CRD, PLACEMENT_CRD]).await;
    // Documented: the hub publishes no schema for Kubernetes' built-in
    // kinds, so their unknown fields are kept, neither refused nor warned about.
    let unknown_cm = |name: &str| configmap(name, "x").replace("\ndata:\n", "\ncolour: red\ndata:\n");
    let (real, hub) = pair.both(&["create", "--validate=strict", "-f", "-"], Some(&unknown_cm("strict")));
    assert!(real.code == 1 && real.stderr.contains("strict decoding error: unknown field \"colour\""), "{real:?}");
    assert_eq!(hub.code, 0, "{hub:?}");
    let (real, hub) = pair.both(&["create", "--validate=warn", "-f", "-"], Some(&unknown_cm("warned")));
    assert!(real.code == 0 && real.stderr.contains("Warning: unknown field \"colour\""), "{real:?}");
    assert!(hub.code == 0 && hub.stderr.is_empty(), "{hub:?}");
    let (real, hub) = pair.both(&get_json("configmap", "warned"), None);
    assert!(real.json().get("colour").is_none() && hub.json()["colour"] == "red", "{real:?}\n{hub:?}");
    let unknown_crp = crp(2, "\n    colour: blue");
    pair.same(
        "strict refuses an unknown placement field",
        &["create", "--validate=strict", "-f", "-"],
        Some(&unknown_crp),
    );
    pair.same("warn accepts it", &["apply", "--validate=warn", "-f", "-"], Some(&unknown_crp));
    let crp_json = ["get", CRP_V1BETA1, "web", "--show-managed-fields", "-o", "json"];
    pair.same_object("the placement", &crp_json, None);
    // Server-side apply refuses an undeclared field in both; Kubernetes as
    // a failure to build the typed patch, the hub as strict decoding.
    let (real, hub) =
        pair.both(&["apply", "--server-side", "--validate=strict", "-f", "-"], Some(&crp(3, "\n    colour: blue")));
    assert!(real.code == 1 && real.stderr.contains(".spec.policy.colour: field not declared in schema"), "{real:?}");
    assert!(
        hub.code == 1 && hub.stderr.contains("strict decoding error: unknown field \"spec.policy.colour\""),
        "{hub:?}"
    );
    // The same refusal of the same field and value; the rule in KubeFleet's words on the hub.
    let (real, hub) = pair.refused_alike(
        "an invalid placement",
        &["apply", "-f", "-"],
        Some(&crp(2, "").replace("numberOfClusters: 2", "numberOfClusters: -1")),
        "The ClusterResourcePlacement \"web\" is invalid: spec.policy.numberOfClusters: Invalid value: -1: ",
    );
    assert!(real.stderr.contains("should be greater than or equal to 0"), "{real:?}");
    assert!(hub.stderr.contains("must be greater than or equal to 0"), "{hub:?}");
    pair.same("an OCM placement", &["apply", "-f", "-"], Some(PLACEMENT));
    pair.same_object(
        "the OCM placement",
        &[
            "get",
            "placements.cluster.open-cluster-management.io",
            "east",
            "-n",
            "diff",
            "--show-managed-fields",
            "-o",
            "json",
        ],
        None,
    );
    pair.same_object("the namespace", &["get", "namespace", "diff", "--show-managed-fields", "-o", "json"], None);
}
