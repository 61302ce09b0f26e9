//! A hub whose nodes serve the Kubernetes-compatible API, and the real
//! clients that talk to it: the `kubectl` binary (from `PATH`, or `KUBECTL`)
//! and the official Python client (`python3` with the `kubernetes` package).
//! `.ci/run` installs both when a machine lacks them.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::hub::free_port;
use crate::poll::eventually;
use crate::{Hub, HubOptions};

/// A hub trio with `--kube-listen` on every node and kubeconfigs from `fleetctl kubeconfig`.
pub struct KubeHub {
    pub hub: Hub,
    /// Kubeconfig with the admin certificate (one context per node).
    pub admin: PathBuf,
    /// Kubeconfig with the viewer certificate.
    pub viewer: PathBuf,
    cache: PathBuf,
}

/// The kubectl binary to run.
pub fn kubectl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("KUBECTL") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|p| p.join("kubectl")).find(|p| p.exists()))
        .unwrap_or_default();
    found.unwrap_or_else(|| panic!("kubectl is not installed (or set KUBECTL): .ci/run installs it"))
}

impl KubeHub {
    /// Starts a trio serving the API and writes both kubeconfigs (once every
    /// node has recorded its address).
    pub async fn start() -> KubeHub {
        KubeHub::start_with(|_| Vec::new()).await
    }

    /// [`KubeHub::start`], node `id` also given `extra(id)`'s flags.
    pub async fn start_with(extra: impl Fn(u64) -> Vec<String>) -> KubeHub {
        let mut hub = Hub::prepare(HubOptions::default());
        for id in 1..=3 {
            let mut args = vec!["--kube-listen".into(), format!("127.0.0.1:{}", free_port())];
            args.extend(extra(id));
            hub.set_node_args(id, args);
        }
        hub.launch().await;
        let admin = hub.dir.path().join("kubeconfig-admin");
        let viewer = hub.dir.path().join("kubeconfig-viewer");
        for (user, path) in [("admin", &admin), ("viewer", &viewer)] {
            let text = eventually("fleetctl kubeconfig lists every node", Duration::from_secs(20), || async {
                let out = hub.fleetctl(&["kubeconfig", "--user", user]);
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                if out.status.success() && (1..=3).all(|id| text.contains(&format!("name: fleet-node-{id}"))) {
                    Ok(text)
                } else {
                    Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
                }
            })
            .await;
            std::fs::write(path, text).expect("write kubeconfig");
        }
        let cache = hub.dir.path().join("kube-cache");
        KubeHub { hub, admin, viewer, cache }
    }

    fn command(&self, kubeconfig: &PathBuf, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.env("KUBECONFIG", kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(["--request-timeout", "20s"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs kubectl as admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.admin.clone(), args)
    }

    /// Runs kubectl with `kubeconfig`.
    pub fn kubectl_with(&self, kubeconfig: &PathBuf, args: &[&str]) -> Output {
        self.command(kubeconfig, args).output().expect("run kubectl")
    }

    /// Runs kubectl as admin and returns its stdout, panicking with its stderr if it failed.
    /// Onboards a user as an operator would: issues `user`'s certificate
    /// (one O per group) with `fleetctl pki issue-user` and writes a
    /// kubeconfig for it, whose path is returned.
    pub fn onboard(&self, user: &str, groups: &[&str]) -> PathBuf {
        let pki = self.hub.pki_dir();
        let mut args = vec!["pki", "issue-user", "--dir", pki.to_str().unwrap_or_default(), "--name", user];
        for group in groups {
            args.extend(["--group", group]);
        }
        let out = self.hub.fleetctl(&args);
        let said =
            |out: &Output| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said(&out).contains(&format!("{user}.pem")), "{}", said(&out));
        let path = self.hub.dir.path().join(format!("kubeconfig-{user}"));
        let out = self.hub.fleetctl(&["kubeconfig", "--user", user]);
        assert!(out.status.success(), "{}", said(&out));
        std::fs::write(&path, &out.stdout).expect("write kubeconfig");
        path
    }

    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Starts a long-running kubectl (e.g. `get -w`) whose stdout lines arrive on the receiver.
    pub fn kubectl_stream(&self, args: &[&str]) -> Stream {
        let mut child = self.command(&self.admin, args).spawn().expect("spawn kubectl");
        let lines = spawn_line_reader(&mut child);
        Stream { child, lines }
    }
}

/// A running client whose output lines are read as they come.
pub struct Stream {
    child: Child,
    lines: Receiver<String>,
}

fn spawn_line_reader(child: &mut Child) -> Receiver<String> {
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
    rx
}

/// Fails the test at once when Python's official `kubernetes` client is
/// missing (else a script dies with an import error and the test times out
/// waiting for its lines).
pub fn require_python_client() {
    let found = Command::new("python3")
        .args(["-c", "import kubernetes"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "Python's official Kubernetes client is not installed: pip install kubernetes (tests/run.sh installs it)"
    );
}

impl Stream {
    /// Starts `python3 SCRIPT ARGS...` with its stdout read line by line
    /// (failing at once, naming the package, without the official client).
    pub fn python(script: &str, args: &[&str]) -> Stream {
        require_python_client();
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn python3");
        let lines = spawn_line_reader(&mut child);
        Stream { child, lines }
    }

    /// Waits for a line satisfying `wanted`; panics with every line seen after `timeout`.
    pub fn wait_for(&mut self, what: &str, timeout: Duration, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => seen.push(line),
                Err(_) => panic!("timed out after {timeout:?} waiting for {what}; lines seen: {seen:?}"),
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
