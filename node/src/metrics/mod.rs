//! The node's Prometheus metrics, served on `--http-listen`'s `/metrics`.
//!
//! One registry per process. Code that sees an event calls a function here
//! (`record_request`, `watch_opened`, `reconciled`, ...); gauges that
//! describe state (leadership, members, placements) are read fresh at each
//! scrape ([`scrape`]). Names follow Prometheus conventions and mirror
//! etcd's and the Kubernetes API server's where they mean the same thing;
//! `docs/metrics.md` lists them.

pub mod grpc;
pub mod scrape;

use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::Duration;

use fleet_raft::Consensus;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Which wire API a request came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// The `Fleet` gRPC service (fleetctl, agents).
    Grpc,
    /// The Kubernetes-compatible HTTPS API (kubectl).
    Kube,
}

impl Api {
    fn as_str(self) -> &'static str {
        match self {
            Api::Grpc => "grpc",
            Api::Kube => "kube",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    api: &'static str,
    verb: String,
    kind: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    api: &'static str,
    verb: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    kind: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SchedulerLabels {
    scheduler: &'static str,
}

/// A histogram for request latencies: 5 ms to ~80 s, doubling.
fn request_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

/// A histogram for controller and scheduler work: 0.1 ms to ~6.5 s, doubling.
fn work_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

/// Every metric handle of the process, and the registry that encodes them.
struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<DurationLabels, Histogram>,
    watchers: Family<KindLabel, Gauge>,
    watch_events: Family<KindLabel, Counter>,
    queue_depth: Gauge,
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_seconds: Family<KindLabel, Histogram>,
    scheduling_seconds: Family<SchedulerLabels, Histogram>,
    state: scrape::StateGauges,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("fleet");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Requests by API (grpc, kube), verb, kind and HTTP-equivalent status code",
            requests.clone(),
        );
        let request_seconds =
            Family::<DurationLabels, Histogram>::new_with_constructor(request_histogram as fn() -> Histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Request latency by API, verb and kind (for watches: until the stream starts)",
            request_seconds.clone(),
        );
        let watchers = Family::<KindLabel, Gauge>::default();
        registry.register("apiserver_registered_watchers", "Watches open on this node, by kind", watchers.clone());
        let watch_events = Family::<KindLabel, Counter>::default();
        registry.register("apiserver_watch_events", "Watch events sent by this node, by kind", watch_events.clone());
        let queue_depth = Gauge::default();
        registry.register(
            "workqueue_depth",
            "Keys waiting in the controllers' work queue (on the leader)",
            queue_depth.clone(),
        );
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "controller_reconcile",
            "Reconciles by the key's kind and result (success, requeue, conflict, error)",
            reconciles.clone(),
        );
        let reconcile_seconds =
            Family::<KindLabel, Histogram>::new_with_constructor(work_histogram as fn() -> Histogram);
        registry.register(
            "controller_reconcile_duration_seconds",
            "Duration of one reconcile (its steps and their writes), by the key's kind",
            reconcile_seconds.clone(),
        );
        let scheduling_seconds =
            Family::<SchedulerLabels, Histogram>::new_with_constructor(work_histogram as fn() -> Histogram);
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Duration of one scheduling pass of a placement, by scheduler (kubefleet, ocm)",
            scheduling_seconds.clone(),
        );
        let state = scrape::StateGauges::register(&mut registry);
        Metrics {
            registry: Mutex::new(registry),
            requests,
            request_seconds,
            watchers,
            watch_events,
            queue_depth,
            reconciles,
            reconcile_seconds,
            scheduling_seconds,
            state,
        }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Records one API request: `verb` as the API server names it (`GET`,
/// `LIST`, `WATCH`, `APPLY`, `CREATE`, `UPDATE`, `PATCH`, `DELETE`; other
/// calls by their own name), `kind` the object kind (empty when none),
/// `code` the HTTP status (gRPC codes are mapped to theirs).
pub fn record_request(api: Api, verb: &str, kind: &str, code: u16, elapsed: Duration) {
    let m = &*METRICS;
    let (verb, kind) = (verb.to_string(), kind.to_string());
    m.requests
        .get_or_create(&RequestLabels {
            api: api.as_str(),
            verb: verb.clone(),
            kind: kind.clone(),
            code: code.to_string(),
        })
        .inc();
    m.request_seconds.get_or_create(&DurationLabels { api: api.as_str(), verb, kind }).observe(elapsed.as_secs_f64());
}

/// Notes the kind the current gRPC request is about (see [`grpc`]); a no-op
/// outside a measured request.
pub fn note_kind(kind: &str) {
    grpc::note_kind(kind);
}

/// Counts an open watch of `kind` until dropped.
pub struct WatchGuard {
    kind: String,
}

/// A watch of `kind` started; it counts as open until the guard is dropped.
pub fn watch_opened(kind: &str) -> WatchGuard {
    METRICS.watchers.get_or_create(&KindLabel { kind: kind.to_string() }).inc();
    WatchGuard { kind: kind.to_string() }
}

impl WatchGuard {
    /// One event of this watch went out.
    pub fn event_sent(&self) {
        METRICS.watch_events.get_or_create(&KindLabel { kind: self.kind.clone() }).inc();
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        METRICS.watchers.get_or_create(&KindLabel { kind: std::mem::take(&mut self.kind) }).dec();
    }
}

/// The controllers' work queue now holds `depth` keys.
pub fn queue_depth(depth: usize) {
    METRICS.queue_depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
}

/// How a reconcile ended, for [`reconciled`].
#[derive(Clone, Copy, Debug)]
pub enum ReconcileResult {
    Success,
    Requeue,
    Conflict,
    Error,
}

/// One reconcile of a key of `kind` ended with `result` after `elapsed`.
pub fn reconciled(kind: &str, result: ReconcileResult, elapsed: Duration) {
    let result = match result {
        ReconcileResult::Success => "success",
        ReconcileResult::Requeue => "requeue",
        ReconcileResult::Conflict => "conflict",
        ReconcileResult::Error => "error",
    };
    let m = &*METRICS;
    m.reconciles.get_or_create(&ReconcileLabels { kind: kind.to_string(), result }).inc();
    m.reconcile_seconds.get_or_create(&KindLabel { kind: kind.to_string() }).observe(elapsed.as_secs_f64());
}

/// Times a scheduling pass of `scheduler` (`kubefleet`, `ocm`) until dropped.
pub struct SchedulingTimer {
    scheduler: &'static str,
    started: std::time::Instant,
}

/// Starts timing one scheduling pass.
pub fn scheduling(scheduler: &'static str) -> SchedulingTimer {
    SchedulingTimer { scheduler, started: std::time::Instant::now() }
}

impl Drop for SchedulingTimer {
    fn drop(&mut self) {
        METRICS
            .scheduling_seconds
            .get_or_create(&SchedulerLabels { scheduler: self.scheduler })
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// What this node's scrapes read: its consensus, and the leader's
/// heartbeat table.
static NODE: OnceLock<scrape::Node> = OnceLock::new();

/// Registers this node's consensus and storage metrics and starts counting
/// leader changes. Once per process; later calls (tests running several
/// nodes in one process) are ignored.
pub fn register_node(
    consensus: Arc<Consensus>,
    arrivals: Arc<crate::members::health::Arrivals>,
    data_dir: std::path::PathBuf,
) {
    let node = scrape::Node { consensus: Arc::downgrade(&consensus), arrivals, data_dir };
    if NODE.set(node).is_err() {
        return;
    }
    let mut registry = METRICS.registry();
    scrape::register_consensus(&mut registry, &consensus);
    tokio::spawn(scrape::count_leader_changes(consensus.raft().server_metrics(), METRICS.state.leader_changes.clone()));
}

/// The Prometheus text of every metric, fresh.
pub async fn encode() -> String {
    if let Some(node) = NODE.get() {
        scrape::refresh(node, &METRICS.state).await;
    }
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &METRICS.registry()) {
        tracing::warn!("encoding metrics: {e}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `series` in `text` (other tests of this process may add to shared series).
    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[tokio::test]
    async fn recorded_events_show_in_the_exposition() {
        record_request(Api::Kube, "LIST", "MetricsTestKind", 200, Duration::from_millis(3));
        let watch = watch_opened("MetricsTestKind");
        watch.event_sent();
        reconciled("MetricsTestKind", ReconcileResult::Conflict, Duration::from_millis(1));
        drop(scheduling("kubefleet"));
        let text = encode().await;
        for (series, expected) in [
            (r#"fleet_apiserver_request_total{api="kube",verb="LIST",kind="MetricsTestKind",code="200"}"#, 1.0),
            (r#"fleet_apiserver_request_duration_seconds_count{api="kube",verb="LIST",kind="MetricsTestKind"}"#, 1.0),
            (r#"fleet_apiserver_registered_watchers{kind="MetricsTestKind"}"#, 1.0),
            (r#"fleet_apiserver_watch_events_total{kind="MetricsTestKind"}"#, 1.0),
            (r#"fleet_controller_reconcile_total{kind="MetricsTestKind",result="conflict"}"#, 1.0),
        ] {
            assert_eq!(value(&text, series), Some(expected), "{series} in\n{text}");
        }
        let passes = r#"fleet_scheduler_scheduling_attempt_duration_seconds_count{scheduler="kubefleet"}"#;
        assert!(value(&text, passes).is_some_and(|v| v >= 1.0), "{text}");
        assert!(text.contains("# TYPE fleet_workqueue_depth gauge"), "{text}");
        drop(watch);
        let text = encode().await;
        assert_eq!(value(&text, r#"fleet_apiserver_registered_watchers{kind="MetricsTestKind"}"#), Some(0.0));
        assert!(text.ends_with("# EOF\n"));
    }
}
