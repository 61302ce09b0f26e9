//! Real Kubernetes member clusters: the `realkube` Go program (`realkube/`
//! in the repository: etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler and KWOK in one process) started once per cluster on
//! loopback ports, in a temp dir.
//!
//! The program is built with `realkube/build.sh` on first use into
//! `target/realkube/realkube` (a file lock keeps concurrent test processes
//! from building it twice; Go's build cache makes later builds a relink
//! check). A missing Go toolchain is a test failure that says so, never a
//! skip.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::kube::kubectl_binary;

/// How long a cluster may take to become ready (a cold start on a loaded
/// 2-core machine takes tens of seconds).
const READY_TIMEOUT: Duration = Duration::from_secs(240);

/// The repository's root (the workspace of this crate's parent).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The `go` command: `$GO`, else `go` on `PATH`, else Go's default install.
pub fn go_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("GO") {
        return PathBuf::from(path);
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("go")).find(|p| p.exists()));
    let fallback = PathBuf::from("/usr/local/go/bin/go");
    match on_path {
        Some(path) => path,
        None if fallback.exists() => fallback,
        None => panic!(
            "the Go toolchain is not installed (no `go` on PATH, nor $GO): the real-cluster tests build \
             realkube/ with it; install Go 1.26 or newer"
        ),
    }
}

/// The built `realkube` binary, building it if this test process has not yet.
pub fn realkube_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_realkube).clone()
}

fn build_realkube() -> PathBuf {
    let dir = build_with_go("realkube", "realkube/build.sh");
    dir.join("realkube")
}

/// Runs the repository's Go build script `script` (its one argument: what
/// to build, `target/<dir>/<dir>`) once per target dir at a time (a file
/// lock keeps concurrent test processes from building twice; Go's build
/// cache makes later builds a relink check), and answers `target/<dir>`.
/// A missing Go toolchain fails here, naming what to install.
pub fn build_with_go(dir: &str, script: &str) -> PathBuf {
    // target/<profile>/fleet-node → target/<dir>
    let target = crate::hub::binary("fleet-node").parent().and_then(Path::parent).map(Path::to_path_buf);
    let out_dir = target.unwrap_or_default().join(dir);
    std::fs::create_dir_all(&out_dir).unwrap_or_else(|e| panic!("create target/{dir}: {e}"));
    let lock = File::create(out_dir.join("build.lock")).expect("create the build lock");
    lock.lock().unwrap_or_else(|e| panic!("lock target/{dir}/build.lock: {e}"));
    let started = Instant::now();
    let go_dir = go_binary().parent().map(Path::to_path_buf).unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(go_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap_or_default();
    let out = Command::new(repository().join(script))
        .arg(out_dir.join(dir))
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = lock.unlock();
    eprintln!("{script} built (or found up to date) in {:.1?}", started.elapsed());
    out_dir
}

/// The CustomResourceDefinitions `names` (e.g.
/// `clusterresourceplacements.placement.kubernetes-fleet.io`) as one YAML
/// stream, read by `realkube/cmd/crds` from the KubeFleet and Open Cluster
/// Management Go modules pinned in realkube's go.mod.
pub fn published_crds(names: &[&str]) -> String {
    let out = Command::new(go_binary())
        .args(["run", "./cmd/crds"])
        .args(names)
        .current_dir(repository().join("realkube"))
        .stdin(Stdio::null())
        .output()
        .expect("run go run ./cmd/crds");
    assert!(
        out.status.success(),
        "go run ./cmd/crds {} failed:\n{}",
        names.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Options of one real cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub nodes: u32,
    pub node_cpu: String,
    pub node_memory: String,
    pub node_labels: String,
    /// Keep the API server's audit log (every request's metadata), read by
    /// [`RealCluster::audit_events`].
    pub audit: bool,
    /// Images no registry serves: Pods using one stay Pending and not
    /// Ready, their containers waiting with `ErrImagePull`, as a kubelet
    /// leaves them (the fake Nodes pull nothing).
    pub unpullable_images: Vec<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            nodes: 2,
            node_cpu: "8".into(),
            node_memory: "32Gi".into(),
            node_labels: String::new(),
            audit: false,
            unpullable_images: Vec::new(),
        }
    }
}

/// One running real Kubernetes cluster, stopped (SIGTERM, then SIGKILL) and
/// removed on drop.
pub struct RealCluster {
    pub name: String,
    pub dir: TempDir,
    /// The admin kubeconfig (system:masters).
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    child: Option<Child>,
}

impl RealCluster {
    /// Starts a cluster with default options and waits until it is ready.
    pub fn start(name: &str) -> RealCluster {
        RealCluster::start_with(name, &ClusterOptions::default())
    }

    /// Starts clusters side by side (their start-ups overlap) and waits for all.
    pub fn start_many(clusters: &[(&str, ClusterOptions)]) -> Vec<RealCluster> {
        std::thread::scope(|scope| {
            let started: Vec<_> = clusters
                .iter()
                .map(|(name, options)| scope.spawn(move || RealCluster::start_with(name, options)))
                .collect();
            started.into_iter().map(|handle| handle.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        })
    }

    /// Starts a cluster and waits until it prints its ready line.
    pub fn start_with(name: &str, options: &ClusterOptions) -> RealCluster {
        let binary = realkube_binary();
        let dir = tempfile::tempdir().expect("temp dir");
        let log = File::create(dir.path().join("realkube.log")).expect("realkube log");
        let mut command = Command::new(binary);
        if options.audit {
            command.arg("--audit-log").arg(dir.path().join("audit.log"));
        }
        if !options.unpullable_images.is_empty() {
            command.arg("--unpullable-images").arg(options.unpullable_images.join(","));
        }
        let mut child = command
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--name", name])
            .args(["--nodes", &options.nodes.to_string()])
            .args(["--node-cpu", &options.node_cpu, "--node-memory", &options.node_memory])
            .args(["--node-labels", &options.node_labels])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn realkube");
        let stdout = child.stdout.take().expect("realkube stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut cluster =
            RealCluster { name: name.to_string(), kubeconfig: PathBuf::new(), server: String::new(), dir, child: None };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("realkube: ready ") {
                        for field in rest.split_whitespace() {
                            if let Some(path) = field.strip_prefix("kubeconfig=") {
                                cluster.kubeconfig = PathBuf::from(path);
                            } else if let Some(url) = field.strip_prefix("server=") {
                                cluster.server = url.to_string();
                            }
                        }
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("realkube {name} exited ({status}) before it was ready:\n{}", cluster.log_tail());
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("realkube {name} not ready within {READY_TIMEOUT:?}:\n{}", cluster.log_tail());
                }
            }
        }
        cluster.child = Some(child);
        cluster
    }

    /// The last lines of the cluster's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("realkube.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Runs kubectl against this cluster as its admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_as(&self.kubeconfig, args, None)
    }

    /// Runs kubectl with another kubeconfig, optionally feeding `stdin`.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write;
        let mut child = Command::new(kubectl_binary())
            .env("KUBECONFIG", kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("kube-cache"))
            .args(["--request-timeout", "30s"])
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl as admin and returns stdout; panics with stderr on failure.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {} on {}: {}",
            args.join(" "),
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// `kubectl apply -f -` with `yaml`, as admin; panics on failure.
    pub fn apply(&self, yaml: &str) -> String {
        let out = self.kubectl_as(&self.kubeconfig, &["apply", "-f", "-"], Some(yaml));
        assert!(
            out.status.success(),
            "kubectl apply on {}: {}\n{yaml}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// The object as JSON (`namespace` empty for cluster-scoped kinds), or
    /// `None` when the cluster says NotFound.
    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let mut args = vec!["get", kind, name, "-o", "json"];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        let out = self.kubectl(&args);
        if out.status.success() {
            return serde_json::from_slice(&out.stdout).ok();
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("NotFound") || err.contains("not found"), "kubectl get {kind} {name}: {err}");
        None
    }

    /// Installs the published CRDs `names` (see [`published_crds`]) and
    /// waits until the API serves them.
    pub fn install_crds(&self, names: &[&str]) {
        let yaml = published_crds(names);
        // Server-side: the largest CRDs exceed the size limit of kubectl's last-applied annotation.
        let out = self.kubectl_as(&self.kubeconfig, &["apply", "--server-side", "-f", "-"], Some(&yaml));
        assert!(out.status.success(), "installing CRDs on {}: {}", self.name, String::from_utf8_lossy(&out.stderr));
        // Polled here rather than with `kubectl wait`, which fails at once
        // when it reads a CRD before the server has given it any condition.
        let established = |name: &str| {
            self.get("crd", "", name).is_some_and(|crd| {
                crd["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            })
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !names.iter().all(|n| established(n)) {
            assert!(Instant::now() < deadline, "CRDs {names:?} not Established on {} within 60s", self.name);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The audit events the API server has written so far (with
    /// [`ClusterOptions::audit`]), each once, at `ResponseComplete`.
    pub fn audit_events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("audit.log")).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["stage"] == "ResponseComplete")
            .collect()
    }

    /// The process id (for reading its memory).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
