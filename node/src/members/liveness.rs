//! What the health loop needs to know of every MemberCluster — its
//! heartbeat period, whether it joined, whether it is already marked
//! `Healthy=Unknown` — kept decoded in memory and maintained from the
//! store's watch events, so the loop finds the overdue clusters without
//! listing and decoding the whole fleet twice a second. Only an overdue
//! cluster is read from the store, right before its status is written.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleet_api::kinds::FLEET_CLUSTER_GROUP;
use fleet_api::member::{self, CONDITION_HEALTHY, CONDITION_JOINED};
use fleet_api::Object;
use fleet_statemachine::{Ended, EventType, HubMessage, Interest, ListQuery, Store, WatchEvent};

/// One cluster's part of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liveness {
    /// `spec.heartbeatPeriodSeconds` (at least one second).
    pub period: Duration,
    /// `Joined=True`: only joined clusters can time out.
    pub joined: bool,
    /// `Healthy=Unknown` already: nothing left to write.
    pub timed_out: bool,
}

impl Liveness {
    /// Reads it from a MemberCluster.
    pub fn of(mc: &Object) -> Liveness {
        let status = member::status_of(mc);
        let has = |type_: &str, value: &str| status.conditions.iter().any(|c| c.type_ == type_ && c.status == value);
        Liveness {
            period: Duration::from_secs(member::spec_of(mc).heartbeat_period().max(1) as u64),
            joined: has(CONDITION_JOINED, "True"),
            timed_out: has(CONDITION_HEALTHY, "Unknown"),
        }
    }
}

/// Every MemberCluster's [`Liveness`], by name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MemberView {
    clusters: BTreeMap<String, Liveness>,
    /// The index of the last full listing: events up to it are in the view.
    listed_at: u64,
}

impl MemberView {
    /// A view of exactly `clusters`, listed at `index`.
    pub fn listed(clusters: &[Object], index: u64) -> MemberView {
        let clusters = clusters.iter().map(|mc| (mc.metadata.name.clone(), Liveness::of(mc))).collect();
        MemberView { clusters, listed_at: index }
    }

    /// Follows one store event (others than MemberClusters are ignored, and
    /// so are events the last listing already holds).
    pub fn apply(&mut self, event: &WatchEvent) {
        if event.key.group != FLEET_CLUSTER_GROUP || event.key.kind != "MemberCluster" {
            return;
        }
        if event.resource_version <= self.listed_at {
            return;
        }
        if event.event_type == EventType::Deleted {
            self.clusters.remove(&event.key.name);
        } else {
            self.clusters.insert(event.key.name.clone(), Liveness::of(&event.object));
        }
    }

    /// The joined clusters not yet marked unknown that have been silent
    /// (by `last_heard`) for more than `missed` periods at `now`.
    pub fn overdue(&self, last_heard: impl Fn(&str) -> Option<Instant>, missed: u32, now: Instant) -> Vec<String> {
        self.clusters
            .iter()
            .filter(|(_, l)| l.joined && !l.timed_out)
            .filter(|(name, l)| last_heard(name).is_some_and(|t| now.saturating_duration_since(t) > l.period * missed))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The clusters, by name (for tests and diagnostics).
    pub fn clusters(&self) -> &BTreeMap<String, Liveness> {
        &self.clusters
    }
}

/// The view shared by the follower task and the health loop; `None` until
/// the first listing.
pub type SharedView = Arc<Mutex<Option<MemberView>>>;

/// Keeps `view` up to date with the store until the store's hub closes:
/// subscribe, list, then follow events; relist after falling behind.
pub async fn follow(store: Arc<Store>, view: SharedView) {
    let query = ListQuery { group: FLEET_CLUSTER_GROUP.into(), kind: "MemberCluster".into(), ..Default::default() };
    loop {
        let from = store.applied_index();
        let scope = query.clone();
        let interest = Interest::in_namespace("", move |key| scope.in_scope(key));
        let mut subscription = match store.hub().subscribe_to(from, interest) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("member liveness view: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let listing = {
            let store = store.clone();
            let query = query.clone();
            tokio::task::spawn_blocking(move || store.list(&query)).await
        };
        let (clusters, listed_at) = match listing {
            Ok(Ok(listed)) => listed,
            Ok(Err(e)) => {
                tracing::warn!("member liveness view: listing MemberClusters failed: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(e) => {
                tracing::warn!("member liveness view: {e}");
                continue;
            }
        };
        let mut fresh = MemberView::listed(&clusters, listed_at);
        for event in subscription.backlog.drain(..) {
            fresh.apply(&event);
        }
        *lock(&view) = Some(fresh);
        loop {
            match subscription.receiver.recv().await {
                Ok(HubMessage::Event(event)) => {
                    if let Some(v) = lock(&view).as_mut() {
                        v.apply(&event);
                    }
                }
                Ok(HubMessage::Reset { .. }) | Err(Ended::Lagged) => break,
                Err(Ended::Closed) => return,
            }
        }
    }
}

/// Locks the shared view (a poisoned lock still holds a usable view).
pub fn lock(view: &SharedView) -> std::sync::MutexGuard<'_, Option<MemberView>> {
    view.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn mc(name: &str, period: i64, joined: bool, unknown: bool) -> Object {
        let mut conditions = Vec::new();
        if joined {
            conditions.push(
                json!({"type": "Joined", "status": "True", "reason": "r", "message": "", "lastTransitionTime": "t"}),
            );
        }
        let healthy = if unknown { "Unknown" } else { "True" };
        conditions.push(
            json!({"type": "Healthy", "status": healthy, "reason": "r", "message": "", "lastTransitionTime": "t"}),
        );
        serde_json::from_value(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": name}, "spec": {"heartbeatPeriodSeconds": period},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn event(event_type: EventType, object: Object, resource_version: u64) -> WatchEvent {
        WatchEvent {
            event_type,
            key: fleet_api::ObjectKey::of(&object),
            object: Arc::new(object),
            resource_version,
            size: 0,
            previous: None,
        }
    }

    #[test]
    fn only_joined_silent_clusters_not_yet_unknown_are_overdue() {
        let view = MemberView::listed(
            &[mc("a", 10, true, false), mc("b", 10, true, true), mc("c", 10, false, false), mc("d", 100, true, false)],
            5,
        );
        let now = Instant::now() + Duration::from_secs(1000);
        let heard = |_: &str| Some(now - Duration::from_secs(31));
        assert_eq!(view.overdue(heard, 3, now), vec!["a".to_string()]);
        assert!(view.overdue(|_| None, 3, now).is_empty(), "never heard of: no grace start, nothing");
    }

    #[test]
    fn events_the_listing_holds_are_skipped() {
        let mut view = MemberView::listed(&[mc("a", 10, true, false)], 7);
        view.apply(&event(EventType::Modified, mc("a", 10, false, false), 6));
        assert!(view.clusters()["a"].joined, "an older event does not step the view back");
        view.apply(&event(EventType::Deleted, mc("a", 10, true, false), 8));
        assert!(view.clusters().is_empty());
    }

    /// One step of a random history of MemberClusters.
    #[derive(Debug, Clone)]
    enum Step {
        Put { name: u8, period: i64, joined: bool, unknown: bool },
        Delete { name: u8 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0u8..6, 1i64..100, any::<bool>(), any::<bool>()).prop_map(|(name, period, joined, unknown)| Step::Put {
                name,
                period,
                joined,
                unknown
            }),
            (0u8..6).prop_map(|name| Step::Delete { name }),
        ]
    }

    proptest! {
        /// Following the events of any history from any listing point gives
        /// the same view as a fresh listing at the end.
        #[test]
        fn following_events_agrees_with_a_fresh_listing(steps in prop::collection::vec(step(), 0..40), listed in 0usize..40) {
            let mut store: BTreeMap<String, Object> = BTreeMap::new();
            let mut events = Vec::new();
            let mut at_listing: Option<(Vec<Object>, u64)> = None;
            for (i, s) in steps.iter().enumerate() {
                if i == listed.min(steps.len()) {
                    at_listing = Some((store.values().cloned().collect(), i as u64));
                }
                let rv = i as u64 + 1;
                match s {
                    Step::Put { name, period, joined, unknown } => {
                        let object = mc(&format!("m{name}"), *period, *joined, *unknown);
                        let kind = if store.contains_key(&object.metadata.name) { EventType::Modified } else { EventType::Added };
                        store.insert(object.metadata.name.clone(), object.clone());
                        events.push(event(kind, object, rv));
                    }
                    Step::Delete { name } => {
                        if let Some(object) = store.remove(&format!("m{name}")) {
                            events.push(event(EventType::Deleted, object, rv));
                        }
                    }
                }
            }
            let (listing, index) = at_listing.unwrap_or((store.values().cloned().collect(), steps.len() as u64));
            let mut view = MemberView::listed(&listing, index);
            // The subscription's backlog may repeat events the listing holds.
            for e in &events {
                view.apply(e);
            }
            let fresh = MemberView::listed(&store.values().cloned().collect::<Vec<_>>(), 0);
            prop_assert_eq!(view.clusters(), fresh.clusters());
        }
    }
}
