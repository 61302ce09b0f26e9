//! KubeFleet's own end-to-end suite (`test/e2e` of the KubeFleet release
//! pinned in `conformance/kubefleet-e2e/go.mod`), compiled unmodified and run
//! against Fleet: the suite's hub context points at a Fleet trio's
//! Kubernetes API, its three member contexts at real clusters (`realkube`)
//! whose `fleet-agent`s joined the hub as `kind-cluster-1` to
//! `kind-cluster-3`, with the labels and annotations the suite expects.
//!
//! Specs that check KubeFleet's own internals, which Fleet deliberately does
//! not have, are listed with their reasons in
//! `conformance/kubefleet-e2e/not-applicable.txt`; they are skipped with
//! Ginkgo's `--skip` and counted as not applicable. Every other spec that
//! does not pass is a failure.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fleet::{apply_yaml, wait_joined};
use crate::kube::{kubectl_binary, KubeHub};
use crate::realkube::{build_with_go, repository, ClusterOptions, RealCluster};

/// The member clusters the suite drives, by context name, with the labels
/// and cluster-resource-id annotation its setup gives each, and the Nodes
/// of its kind config (`kindconfigs/cluster-N.yaml`): its node-count specs
/// count on 2, 3 and 4.
const MEMBERS: [(&str, &str, &str, &str, u32); 3] = [
    ("kind-cluster-1", "east", "prod", "test-cluster-id-1", 2),
    ("kind-cluster-2", "east", "canary", "test-cluster-id-2", 3),
    ("kind-cluster-3", "west", "prod", "test-cluster-id-3", 4),
];

/// The result of one run of the suite.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Specs selected and passed.
    pub passed: Vec<String>,
    /// Specs selected that failed, or were not run because an earlier spec
    /// of their ordered container failed, with the first line of why.
    pub failed: Vec<(String, String)>,
    /// Specs skipped as not applicable (listed in not-applicable.txt).
    pub not_applicable: Vec<String>,
    /// Whether the suite's setup or teardown failed (every spec then fails).
    pub suite_failure: Option<String>,
    /// Wall time of the suite binary.
    pub elapsed: Duration,
}

impl Summary {
    /// The one line a run ends with.
    pub fn line(&self) -> String {
        format!(
            "kubefleet-e2e: {} passed, {} failed, {} not applicable ({:.0} s)",
            self.passed.len(),
            self.failed.len(),
            self.not_applicable.len(),
            self.elapsed.as_secs_f64()
        )
    }
}

/// One entry of the not-applicable list: a substring of a spec's full text
/// (its containers' texts and its own, joined by spaces) and the reason.
#[derive(Debug, Clone)]
pub struct NotApplicable {
    pub spec: String,
    pub reason: String,
}

/// Reads `conformance/kubefleet-e2e/not-applicable.txt`: `SPEC TEXT :: REASON`
/// per line; `#` starts a comment line.
pub fn not_applicable() -> Vec<NotApplicable> {
    let path = repository().join("conformance/kubefleet-e2e/not-applicable.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (spec, reason) =
                line.split_once(" :: ").unwrap_or_else(|| panic!("{}: `{line}` lacks ` :: REASON`", path.display()));
            NotApplicable { spec: spec.trim().to_string(), reason: reason.trim().to_string() }
        })
        .collect()
}

/// Builds the suite and KubeFleet's kubectl plugin once per test process
/// into `target/kubefleet-e2e` (see `conformance/kubefleet-e2e/build.sh`).
pub fn build() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_with_go("kubefleet-e2e", "conformance/kubefleet-e2e/build.sh")).clone()
}

/// A Fleet hub and three real member clusters set up the way the suite's
/// own `setup.sh` leaves a KubeFleet environment, and one kubeconfig with
/// the suite's contexts. Everything stops on drop.
pub struct Environment {
    pub hub: KubeHub,
    pub clusters: Vec<RealCluster>,
    /// Contexts `kind-hub` (Fleet, as admin) and `kind-cluster-1..3`.
    pub kubeconfig: PathBuf,
}

/// A member cluster as the suite's kind clusters behave: `nodes` Nodes,
/// and the image its safe-rollout specs use to break a workload
/// (`random-image-name`) failing to pull, as a kubelet fails on it.
fn member_options(nodes: u32) -> ClusterOptions {
    ClusterOptions { nodes, unpullable_images: vec!["random-image-name".into()], ..Default::default() }
}

impl Environment {
    /// Starts the clusters and the hub, joins the three members and writes the kubeconfig.
    pub async fn start() -> Environment {
        let specs: Vec<(String, ClusterOptions)> =
            MEMBERS.iter().map(|m| (m.0.to_string(), member_options(m.4))).collect();
        let clusters = tokio::task::spawn_blocking(move || {
            let specs: Vec<(&str, ClusterOptions)> = specs.iter().map(|(n, o)| (n.as_str(), o.clone())).collect();
            RealCluster::start_many(&specs)
        })
        .await
        .expect("start real clusters");
        let mut hub = KubeHub::start().await;
        for ((name, region, env, id, _), cluster) in MEMBERS.iter().zip(&clusters) {
            // What the suite's createMemberCluster makes (it accepts an
            // existing object): the service account identity is KubeFleet's
            // join mechanism and is kept as data; Fleet's agent joins with a
            // token.
            apply_yaml(
                &hub.hub,
                &format!(
                    "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: {name}\n  \
                     labels: {{region: {region}, env: {env}}}\n  annotations: {{fleet.azure.com/cluster-resource-id: {id}}}\n\
                     spec:\n  identity: {{name: fleet-member-agent-{short}, kind: ServiceAccount, namespace: fleet-system}}\n  \
                     heartbeatPeriodSeconds: 15\n",
                    short = name.trim_start_matches("kind-")
                ),
            );
            hub.hub.start_agent(name, &["--kubeconfig", cluster.kubeconfig.to_str().unwrap_or_default()]);
        }
        for (name, ..) in MEMBERS {
            wait_joined(&hub.hub, name).await;
        }
        let kubeconfig = hub.hub.dir.path().join("kubeconfig-e2e");
        write_kubeconfig(&kubeconfig, &hub.admin, &clusters);
        Environment { hub, clusters, kubeconfig }
    }

    /// Runs the suite with Ginkgo's `focus` (a regular expression over spec
    /// texts; all specs when empty) and `label_filter`, skipping the
    /// not-applicable specs, in `procs` Ginkgo processes (more than one
    /// through the Ginkgo CLI, as KubeFleet's CI runs it); the suite's
    /// output goes to `log`. When `stop` is set (the harness was
    /// interrupted) the suite is killed and the summary says so, so that
    /// the caller drops the environment and leaves nothing behind.
    pub fn run(&mut self, focus: &str, label_filter: &str, procs: usize, log: &Path, stop: &AtomicBool) -> Summary {
        let dir = build();
        let listed = not_applicable();
        let skip: Vec<String> = listed.iter().map(|n| regex_quote(&n.spec)).collect();
        let report = self.hub.hub.dir.path().join("kubefleet-e2e-report.json");
        let mut flags = vec![
            "timeout=24h".to_string(),
            "v".to_string(),
            "no-color".to_string(),
            format!("json-report={}", report.display()),
        ];
        if !focus.is_empty() {
            flags.push(format!("focus={focus}"));
        }
        if !label_filter.is_empty() {
            flags.push(format!("label-filter={label_filter}"));
        }
        if !skip.is_empty() {
            flags.push(format!("skip={}", skip.join("|")));
        }
        let mut command = if procs > 1 {
            // The CLI runs the compiled suite from its own directory, where
            // build.sh links it (the suite reads manifests by relative path).
            let mut command = Command::new(dir.join("ginkgo"));
            command.arg(format!("--procs={procs}")).args(flags.iter().map(|f| format!("--{f}")));
            command.arg("kubefleet-e2e.test");
            command
        } else {
            let mut command = Command::new(dir.join("kubefleet-e2e"));
            command.args(["-test.timeout", "0"]).args(flags.iter().map(|f| format!("-ginkgo.{f}")));
            command
        };
        command
            .current_dir(dir.join("kubefleet/test/e2e"))
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PATH", path_with_kubectl());
        let out = File::create(log).expect("create the suite's log");
        let err = out.try_clone().expect("clone the log handle");
        let started = Instant::now();
        let mut child = command.stdin(Stdio::null()).stdout(out).stderr(err).spawn().expect("run the suite");
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the suite") {
                break status;
            }
            if stop.load(Ordering::Relaxed) {
                let _ = child.kill();
                let _ = child.wait();
                let suite_failure = Some("interrupted: the suite was stopped before it ended".to_string());
                return Summary { suite_failure, elapsed: started.elapsed(), ..Summary::default() };
            }
            self.rejoin_members();
            std::thread::sleep(Duration::from_millis(250));
        };
        let elapsed = started.elapsed();
        let text = std::fs::read_to_string(&report).unwrap_or_else(|e| {
            panic!("the suite ({status}) wrote no report {}: {e}; see {}", report.display(), log.display())
        });
        let focus = regex::Regex::new(focus).ok().filter(|_| !focus.is_empty());
        let mut summary = summarize(&text, &listed, focus.as_ref());
        summary.elapsed = elapsed;
        summary
    }
}

impl Environment {
    /// Restarts, with a fresh token, the agent of each member whose agent
    /// stopped because the suite deleted its MemberCluster, once the suite
    /// has created the MemberCluster again. Fleet revokes a member's
    /// credentials when its MemberCluster is deleted (KubeFleet's member
    /// agent keeps its service account token and rejoins by itself): issuing
    /// a new token is what an operator does, so the harness does it.
    pub fn rejoin_members(&mut self) {
        let hub = &mut self.hub.hub;
        for (cluster, (name, ..)) in self.clusters.iter().zip(MEMBERS) {
            if hub.agent_exit(name).is_none() {
                continue;
            }
            if !hub.fleetctl(&["get", "mc", name]).status.success() {
                continue;
            }
            eprintln!("kubefleet-e2e: MemberCluster {name} created again: its agent joins with a new token");
            let _ = std::fs::remove_dir_all(hub.agent_dir(name));
            hub.start_agent(name, &["--kubeconfig", cluster.kubeconfig.to_str().unwrap_or_default()]);
        }
    }
}

/// `PATH` with kubectl's directory first (the suite shells out to kubectl).
fn path_with_kubectl() -> std::ffi::OsString {
    let kubectl_dir = kubectl_binary().parent().map(Path::to_path_buf).unwrap_or_default();
    std::env::join_paths(
        std::iter::once(kubectl_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap_or_default()
}

/// Merges the hub's admin kubeconfig and the clusters' into one file and
/// adds the `kind-hub` context (node 1's endpoint; the suite pins one).
fn write_kubeconfig(path: &Path, hub_admin: &Path, clusters: &[RealCluster]) {
    let mut files = vec![hub_admin.to_path_buf()];
    files.extend(clusters.iter().map(|c| c.kubeconfig.clone()));
    let merged = std::env::join_paths(&files).expect("kubeconfig paths");
    let out = Command::new(kubectl_binary())
        .env("KUBECONFIG", merged)
        .args(["config", "view", "--flatten"])
        .output()
        .expect("run kubectl config view");
    assert!(out.status.success(), "kubectl config view: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(path, &out.stdout).expect("write the merged kubeconfig");
    let out = Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(path)
        .args(["config", "set-context", "kind-hub", "--cluster", "fleet-node-1", "--user", "fleet-admin"])
        .output()
        .expect("run kubectl config set-context");
    assert!(out.status.success(), "kubectl config set-context: {}", String::from_utf8_lossy(&out.stderr));
}

/// Escapes a literal for a Go regular expression.
fn regex_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted
}

/// Counts the specs of a Ginkgo JSON report (`--json-report`); a listed
/// spec counts as not applicable only if the run's `focus` selected it.
pub fn summarize(report: &str, listed: &[NotApplicable], focus: Option<&regex::Regex>) -> Summary {
    let mut summary = Summary::default();
    let suites: Vec<Value> = match serde_json::from_str(report) {
        Ok(suites) => suites,
        Err(e) => {
            // Never a silent "0 passed": say the report is unreadable.
            summary.suite_failure = Some(format!("the suite's JSON report does not parse: {e}"));
            return summary;
        }
    };
    if suites.is_empty() {
        summary.suite_failure = Some("the suite's JSON report holds no suite".to_string());
    }
    for spec in suites.iter().flat_map(|s| s["SpecReports"].as_array().cloned().unwrap_or_default()) {
        let state = spec["State"].as_str().unwrap_or_default();
        let kind = spec["LeafNodeType"].as_str().unwrap_or_default();
        let message = spec["Failure"]["Message"].as_str().unwrap_or_default().to_string();
        if kind != "It" {
            if !matches!(state, "passed" | "skipped") {
                summary.suite_failure = Some(format!("{kind} {state}: {message}"));
            }
            continue;
        }
        let mut texts: Vec<String> = spec["ContainerHierarchyTexts"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        texts.push(spec["LeafNodeText"].as_str().unwrap_or_default().to_string());
        let full = texts.join(" ");
        match state {
            "passed" => summary.passed.push(full),
            "skipped" if listed.iter().any(|n| full.contains(&n.spec)) && focus.is_none_or(|f| f.is_match(&full)) => {
                summary.not_applicable.push(full)
            }
            // Skipped by the focus: not selected, not counted.
            "skipped" | "pending" if message.is_empty() => {}
            // The suite skips it itself (Azure's property provider absent,
            // or a Skip in its BeforeAll): not applicable, by its own word.
            "skipped" if !message.contains("earlier spec in an ordered container failed") => {
                summary.not_applicable.push(format!("{full} (the suite skips it: {})", first_line(&message)))
            }
            _ => {
                summary.failed.push((full, format!("{state}: {}", first_line(&message))));
            }
        }
    }
    summary
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_report_is_a_suite_failure() {
        let summary = summarize("[{\"SpecReports\": [", &[], None);
        assert!(summary.suite_failure.is_some_and(|f| f.contains("does not parse")));
        assert!(summarize("[]", &[], None).suite_failure.is_some_and(|f| f.contains("no suite")));
        assert!(summary.passed.is_empty() && summary.failed.is_empty());
    }

    #[test]
    fn specs_are_counted_by_state_and_listing() {
        let report = r#"[{"SpecReports": [
          {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed", "ContainerHierarchyTexts": null, "LeafNodeText": ""},
          {"LeafNodeType": "It", "State": "passed", "ContainerHierarchyTexts": ["A", "B"], "LeafNodeText": "works"},
          {"LeafNodeType": "It", "State": "failed", "ContainerHierarchyTexts": ["A"], "LeafNodeText": "breaks",
           "Failure": {"Message": "Timed out\nmore"}},
          {"LeafNodeType": "It", "State": "skipped", "ContainerHierarchyTexts": ["A"], "LeafNodeText": "after",
           "Failure": {"Message": "Spec skipped because an earlier spec in an ordered container failed"}},
          {"LeafNodeType": "It", "State": "skipped", "ContainerHierarchyTexts": ["Webhook"], "LeafNodeText": "denies"},
          {"LeafNodeType": "It", "State": "skipped", "ContainerHierarchyTexts": ["Azure"], "LeafNodeText": "costs",
           "Failure": {"Message": "Skipping this test spec as Azure property provider is not enabled"}},
          {"LeafNodeType": "It", "State": "skipped", "ContainerHierarchyTexts": ["Other"], "LeafNodeText": "unfocused"}
        ]}]"#;
        let listed = vec![NotApplicable { spec: "Webhook den".into(), reason: "internals".into() }];
        let summary = summarize(report, &listed, None);
        assert_eq!(summary.passed, vec!["A B works".to_string()]);
        assert_eq!(summary.failed.len(), 2);
        assert_eq!(summary.failed[0], ("A breaks".to_string(), "failed: Timed out".to_string()));
        assert_eq!(
            summary.not_applicable,
            [
                "Webhook denies",
                "Azure costs (the suite skips it: Skipping this test spec as Azure property provider is not enabled)"
            ]
        );
        assert!(summary.suite_failure.is_none());
        let focus = regex::Regex::new("^A ").expect("focus");
        let focused = summarize(report, &listed, Some(&focus));
        assert_eq!(focused.not_applicable.len(), 1, "a listed spec the focus did not select is not counted");
    }

    #[test]
    fn literals_are_quoted_for_go_regexps() {
        assert_eq!(regex_quote("a.b (c) [d]|e"), r"a\.b \(c\) \[d\]\|e");
    }
}
