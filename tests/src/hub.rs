//! A hub of real `fleet-node` processes in a temp dir.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ClusterStatusRequest, ClusterStatusResponse};
use tempfile::TempDir;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::poll::eventually;

/// Path of a workspace binary, built by `cargo build --bins`.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test> (a test) or target/<profile>/<bin> (a
    // harness program) → target/<profile>/<name>
    let parent = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir =
        if parent.ends_with("deps") { parent.parent().map(Path::to_path_buf).unwrap_or_default() } else { parent };
    let path = dir.join(name);
    assert!(path.exists(), "{} not found: build the binaries first (cargo build --bins)", path.display());
    path
}

pub use crate::ports::free_port;

/// How to start a hub.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Voters started (and initialized) at first.
    pub nodes: u64,
    /// Node certificates to make (> nodes to add nodes later).
    pub pki_nodes: u64,
    pub snapshot_logs: u64,
    pub keep_logs: u64,
    /// `--init` on every initial node (true) or on node 1 only (false).
    pub init_all: bool,
    /// Extra flags for every node (e.g. `--member-cert-validity 12s`).
    pub node_args: Vec<String>,
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            nodes: 3,
            pki_nodes: 3,
            snapshot_logs: 10_000,
            keep_logs: 1_000,
            init_all: true,
            node_args: Vec::new(),
        }
    }
}

struct NodeProcess {
    port: u16,
    child: Option<Child>,
}

/// Real nodes, their data and certificates, all removed on drop.
pub struct Hub {
    pub dir: TempDir,
    pub options: HubOptions,
    nodes: BTreeMap<u64, NodeProcess>,
    /// Flags for one node only (e.g. `--peer-dial` through proxies).
    node_args: BTreeMap<u64, Vec<String>>,
    agents: BTreeMap<String, Child>,
}

impl Hub {
    /// Makes certificates and starts `options.nodes` nodes, each with `--init`,
    /// then waits for a leader.
    pub async fn start(options: HubOptions) -> Hub {
        let mut hub = Hub::prepare(options);
        hub.launch().await;
        hub
    }

    /// Makes certificates and picks every node's port without starting any
    /// node, so that flags can be set per node first; then [`Hub::launch`].
    pub fn prepare(options: HubOptions) -> Hub {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut hub = Hub {
            dir,
            options: options.clone(),
            nodes: BTreeMap::new(),
            node_args: BTreeMap::new(),
            agents: BTreeMap::new(),
        };
        let pki = hub.pki_dir();
        let out = hub.fleetctl(&[
            "pki",
            "init",
            "--dir",
            pki.to_str().unwrap_or(""),
            "--nodes",
            &options.pki_nodes.to_string(),
        ]);
        assert!(out.status.success(), "pki init failed: {}", String::from_utf8_lossy(&out.stderr));
        for id in 1..=options.pki_nodes {
            hub.nodes.insert(id, NodeProcess { port: free_port(), child: None });
        }
        hub
    }

    /// Starts the initial nodes of a prepared hub and waits for a leader.
    pub async fn launch(&mut self) {
        for id in 1..=self.options.nodes {
            self.start_node(id, self.options.init_all || id == 1);
        }
        self.wait_leader().await;
    }

    /// Flags given to node `id` only, on every (re)start from now on.
    pub fn set_node_args(&mut self, id: u64, args: Vec<String>) {
        self.node_args.insert(id, args);
    }

    /// The PKI directory.
    pub fn pki_dir(&self) -> PathBuf {
        self.dir.path().join("pki")
    }

    /// `--peers` for the initial voters.
    pub fn peers_flag(&self) -> String {
        (1..=self.options.nodes).map(|id| format!("{id}={}", self.endpoint(id))).collect::<Vec<_>>().join(",")
    }

    /// `127.0.0.1:<port>` of node `id`.
    pub fn endpoint(&self, id: u64) -> String {
        format!("127.0.0.1:{}", self.nodes.get(&id).map(|n| n.port).unwrap_or(0))
    }

    /// Endpoints of every node, comma-separated (for fleetctl).
    pub fn endpoints(&self) -> String {
        self.nodes.keys().map(|id| self.endpoint(*id)).collect::<Vec<_>>().join(",")
    }

    /// Ids of every node started so far, running or not (for logs).
    pub fn node_ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// Ids of nodes whose process runs.
    pub fn running(&self) -> Vec<u64> {
        self.nodes.iter().filter(|(_, n)| n.child.is_some()).map(|(id, _)| *id).collect()
    }

    /// The log file of node `id`.
    pub fn log_path(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("node-{id}.log"))
    }

    /// The data dir of node `id`.
    pub fn data_dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("node-{id}"))
    }

    /// Starts (or restarts, on the same data dir) node `id`.
    pub fn start_node(&mut self, id: u64, init: bool) {
        let log = File::options().create(true).append(true).open(self.log_path(id)).expect("log file");
        let port = self.nodes.get(&id).map(|n| n.port).unwrap_or(0);
        let mut cmd = Command::new(binary("fleet-node"));
        cmd.args(["--id", &id.to_string()])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(self.data_dir(id))
            .arg("--tls-dir")
            .arg(self.pki_dir())
            .args(["--peers", &self.peers_flag()])
            .args(["--heartbeat-ms", "50", "--election-timeout-ms", "300"])
            .args(["--snapshot-logs", &self.options.snapshot_logs.to_string()])
            .args(["--keep-logs", &self.options.keep_logs.to_string()])
            .args(&self.options.node_args)
            .args(self.node_args.get(&id).into_iter().flatten())
            .env("RUST_LOG", std::env::var("FLEET_TEST_LOG").unwrap_or_else(|_| "info,openraft=warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if init {
            cmd.arg("--init");
        }
        let child = cmd.spawn().expect("spawn fleet-node");
        // Every node id has an entry (made in `start`); Drop kills and waits.
        self.nodes.entry(id).or_insert(NodeProcess { port, child: None }).child = Some(child);
    }

    /// SIGKILLs node `id`.
    pub fn kill(&mut self, id: u64) {
        if let Some(mut child) = self.nodes.get_mut(&id).and_then(|n| n.child.take()) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERMs node `id` and waits for it to exit cleanly.
    pub fn stop(&mut self, id: u64) {
        if let Some(mut child) = self.nodes.get_mut(&id).and_then(|n| n.child.take()) {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let status = child.wait().expect("wait for node");
            assert!(status.success(), "node {id} did not exit cleanly on SIGTERM: {status}\n{}", self.log_tail(id));
        }
    }

    /// Sends a signal (e.g. `STOP`, `CONT`) to node `id`.
    pub fn signal(&self, id: u64, signal: &str) {
        if let Some(child) = self.nodes.get(&id).and_then(|n| n.child.as_ref()) {
            let _ = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
        }
    }

    /// Runs the fleetctl binary against this hub as admin.
    pub fn fleetctl(&self, args: &[&str]) -> Output {
        self.fleetctl_with_stdin(args, None)
    }

    /// Runs fleetctl with optional standard input.
    pub fn fleetctl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write;
        let mut cmd = Command::new(binary("fleetctl"));
        cmd.args(args)
            .env("FLEET_ENDPOINTS", self.endpoints())
            .env("FLEET_TLS_DIR", self.pki_dir())
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn fleetctl");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        child.wait_with_output().expect("fleetctl output")
    }

    /// A client of node `id` with the `user` certificate from the PKI dir.
    pub async fn client_as(&self, id: u64, user: &str) -> FleetClient<Channel> {
        let pki = self.pki_dir();
        let read = |name: &str| std::fs::read(pki.join(name)).unwrap_or_default();
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read("ca.pem")))
            .identity(Identity::from_pem(read(&format!("{user}.pem")), read(&format!("{user}-key.pem"))));
        connect(&self.endpoint(id), tls)
    }

    /// An admin client of node `id`.
    pub async fn client(&self, id: u64) -> FleetClient<Channel> {
        self.client_as(id, "admin").await
    }

    /// Cluster status as node `id` reports it.
    pub async fn status(&self, id: u64) -> Result<ClusterStatusResponse, String> {
        self.status_with(id, false).await
    }

    /// Cluster status as node `id` reports it, with every member's state
    /// digest if `digest`.
    pub async fn status_with(&self, id: u64, digest: bool) -> Result<ClusterStatusResponse, String> {
        let mut client = self.client(id).await;
        let request = ClusterStatusRequest { digest };
        client.cluster_status(request).await.map(|r| r.into_inner()).map_err(|e| e.to_string())
    }

    /// Waits until every member reports the same applied index in its
    /// digest, then checks that their digests are identical (panicking with
    /// each member's digest if not). Returns the index and the digest. Call
    /// it once writes have stopped.
    pub async fn replicas_agree(&self) -> (u64, String) {
        let running = self.running();
        let members = eventually("every replica at the same applied index", Duration::from_secs(60), || async {
            let mut last = String::new();
            for id in &running {
                match self.status_with(*id, true).await {
                    Ok(status) => {
                        let indexes: Vec<u64> = status.members.iter().map(|m| m.digest_index).collect();
                        let complete = status.members.len() == running.len()
                            && status.members.iter().all(|m| m.reachable && !m.digest.is_empty());
                        if complete && indexes.windows(2).all(|w| w[0] == w[1]) {
                            return Ok(status.members);
                        }
                        last = format!("node {id} reports digest indexes {indexes:?}");
                    }
                    Err(e) => last = format!("node {id}: {e}"),
                }
            }
            Err(last)
        })
        .await;
        let first = &members[0];
        let report: Vec<String> =
            members.iter().map(|m| format!("node {} at {}: {}", m.id, m.digest_index, m.digest)).collect();
        assert!(members.iter().all(|m| m.digest == first.digest), "replicas diverged:\n{}", report.join("\n"));
        (first.digest_index, first.digest.clone())
    }

    /// Waits until every running node agrees on one leader; returns it.
    pub async fn wait_leader(&self) -> u64 {
        eventually("one leader agreed by every running node", Duration::from_secs(20), || async {
            let mut leaders = Vec::new();
            for id in self.running() {
                leaders.push(self.status(id).await?.leader);
            }
            match leaders.first() {
                Some(&l) if l != 0 && leaders.iter().all(|x| *x == l) && self.running().contains(&l) => Ok(l),
                _ => Err(format!("leaders reported: {leaders:?}")),
            }
        })
        .await
    }

    /// The data dir of the agent of `cluster`.
    pub fn agent_dir(&self, cluster: &str) -> PathBuf {
        self.dir.path().join(format!("agent-{cluster}"))
    }

    /// TLS with the certificate the agent of `cluster` holds now (`None`
    /// until it has written its key and certificate).
    pub fn member_tls(&self, cluster: &str) -> Option<ClientTlsConfig> {
        let dir = self.agent_dir(cluster).join("tls");
        let read = |f: &str| std::fs::read(dir.join(f)).ok().filter(|b| !b.is_empty());
        Some(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(read("ca.pem")?))
                .identity(Identity::from_pem(read("agent.pem")?, read("agent-key.pem")?)),
        )
    }

    /// The log file of the agent of `cluster`.
    pub fn agent_log(&self, cluster: &str) -> PathBuf {
        self.dir.path().join(format!("agent-{cluster}.log"))
    }

    /// Creates a bootstrap token for `cluster` with fleetctl: (token, CA fingerprint).
    pub fn token(&self, cluster: &str, ttl: &str) -> (String, String) {
        let out = self.fleetctl(&["token", "create", "--cluster", cluster, "--ttl", ttl]);
        assert!(out.status.success(), "token create: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mut lines = text.lines();
        (lines.next().unwrap_or_default().to_string(), lines.next().unwrap_or_default().to_string())
    }

    /// Starts the agent of `cluster` (joining with a fresh token on its first
    /// start), with extra flags such as `--sim-nodes`.
    pub fn start_agent(&mut self, cluster: &str, extra: &[&str]) {
        let dir = self.agent_dir(cluster);
        let mut cmd = Command::new(binary("fleet-agent"));
        cmd.args(["--cluster", cluster, "--hub", &self.endpoints()])
            .arg("--data-dir")
            .arg(&dir)
            .args(["--sim-ready-delay", "300ms"])
            .args(extra)
            .env("RUST_LOG", std::env::var("FLEET_TEST_LOG").unwrap_or_else(|_| "info".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::options().create(true).append(true).open(self.agent_log(cluster)).expect("agent log"));
        if !dir.join("tls").join("agent.pem").exists() {
            let (token, fingerprint) = self.token(cluster, "10m");
            cmd.args(["--token", &token, "--ca-fingerprint", &fingerprint]);
        }
        let child = cmd.spawn().expect("spawn fleet-agent");
        self.agents.insert(cluster.to_string(), child);
    }

    /// SIGKILLs the agent of `cluster`.
    pub fn kill_agent(&mut self, cluster: &str) {
        if let Some(mut child) = self.agents.remove(cluster) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends a signal (`STOP`, `CONT`, `TERM`) to the agent of `cluster`.
    pub fn signal_agent(&self, cluster: &str, signal: &str) {
        if let Some(child) = self.agents.get(cluster) {
            let _ = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
        }
    }

    /// Whether the agent of `cluster` has exited, and how.
    pub fn agent_exit(&mut self, cluster: &str) -> Option<std::process::ExitStatus> {
        self.agents.get_mut(cluster).and_then(|c| c.try_wait().ok().flatten())
    }

    /// Runs `fleet-agent inspect` on the agent's data dir.
    pub fn inspect(&self, cluster: &str, args: &[&str]) -> Output {
        Command::new(binary("fleet-agent"))
            .arg("inspect")
            .arg("--data-dir")
            .arg(self.agent_dir(cluster))
            .args(args)
            .output()
            .expect("fleet-agent inspect")
    }

    /// Edits the embedded target of `cluster` out of band, as `kubectl` on
    /// that cluster would: `fleet-agent SUBCOMMAND --data-dir DIR ARGS...`
    /// (`apply -f -` with `stdin`, `patch KIND NAME -n NS -p JSON`, `delete
    /// KIND NAME -n NS`), also while its agent runs.
    pub fn edit_member(&self, cluster: &str, subcommand: &str, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write;
        let mut child = Command::new(binary("fleet-agent"))
            .arg(subcommand)
            .arg("--data-dir")
            .arg(self.agent_dir(cluster))
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fleet-agent");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        child.wait_with_output().expect("fleet-agent output")
    }

    /// The last lines of an agent's log.
    pub fn agent_log_tail(&self, cluster: &str) -> String {
        let text = std::fs::read_to_string(self.agent_log(cluster)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// The last lines of node `id`'s log, for failure messages.
    pub fn log_tail(&self, id: u64) -> String {
        let text = std::fs::read_to_string(self.log_path(id)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

/// An admin client of `endpoint` with the certificates of `pki` (for tasks
/// that outlive a borrow of the hub).
pub fn admin_client(endpoint: &str, pki: &std::path::Path) -> FleetClient<Channel> {
    let read = |name: &str| std::fs::read(pki.join(name)).unwrap_or_default();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.pem")))
        .identity(Identity::from_pem(read("admin.pem"), read("admin-key.pem")));
    connect(endpoint, tls)
}

/// A lazily connecting mTLS client of one endpoint.
pub fn connect(endpoint: &str, tls: ClientTlsConfig) -> FleetClient<Channel> {
    let channel = Endpoint::from_shared(format!("https://{endpoint}"))
        .and_then(|e| e.tls_config(tls))
        .map(|e| e.connect_timeout(Duration::from_secs(2)).timeout(Duration::from_secs(15)).connect_lazy())
        .expect("endpoint");
    FleetClient::new(channel)
}

impl Drop for Hub {
    fn drop(&mut self) {
        for child in self.agents.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for node in self.nodes.values_mut() {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
