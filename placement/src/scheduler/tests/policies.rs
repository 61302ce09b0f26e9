//! Choosing (PickAll, PickFixed, PickN), ordering, and binding actions.

use serde_json::json;

use super::*;

fn pick_n(n: i64) -> PlacementPolicy {
    policy(json!({"placementType": "PickN", "numberOfClusters": n}))
}

fn fleet(names: &[&str]) -> Vec<ClusterInfo> {
    names.iter().map(|n| cluster(n, &[])).collect()
}

fn creates(out: &SchedulingOutcome) -> Vec<&str> {
    out.actions
        .iter()
        .filter_map(|a| match a {
            BindingAction::Create { cluster, .. } => Some(cluster.as_str()),
            _ => None,
        })
        .collect()
}

fn unschedules(out: &SchedulingOutcome) -> Vec<&str> {
    out.actions
        .iter()
        .filter_map(|a| match a {
            BindingAction::Unschedule { cluster, .. } => Some(cluster.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn ties_go_to_the_larger_cluster_name() {
    let out = run(&pick_n(1), None, &fleet(&["a", "b", "c"]), &[]);
    assert_eq!(names(&out.chosen), ["c"]);
    assert_eq!(names(&out.not_chosen), ["b", "a"]);
    assert_eq!(
        out.not_chosen[0].reason,
        "Cluster \"b\" does not score high enough (affinity score: 0, topology spread score: 0)"
    );
}

#[test]
fn affinity_score_beats_the_name_tie_break() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}}}));
    let out = run(&p, None, &[cluster("a", &[("env", "prod")]), cluster("z", &[])], &[]);
    assert_eq!(names(&out.chosen), ["a"]);
    assert_eq!(
        out.chosen[0].reason,
        "Successfully scheduled resources for placement in \"a\" (affinity score: 1, topology spread score: 0): picked by scheduling policy"
    );
    assert_eq!(out.chosen[0].cluster_score, score(1, 0));
}

#[test]
fn the_result_does_not_depend_on_input_order() {
    let forward = fleet(&["a", "b", "c", "d"]);
    let mut backward = forward.clone();
    backward.reverse();
    assert_eq!(run(&pick_n(2), None, &forward, &[]), run(&pick_n(2), None, &backward, &[]));
}

#[test]
fn number_of_clusters_from_the_annotation_wins() {
    let out = run(&pick_n(1), Some(3), &fleet(&["a", "b", "c"]), &[]);
    assert_eq!(out.chosen.len(), 3);
    assert_eq!(out.message, "found all cluster needed as specified by the scheduling policy, found 3 cluster(s)");
}

#[test]
fn pick_n_short_of_candidates_picks_all_and_is_unfulfilled() {
    let clusters = [cluster("a", &[]), ineligible(cluster("b", &[]), "cluster has not joined")];
    let out = run(&pick_n(3), None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["a"]);
    assert!(!out.fulfilled);
    assert_eq!(
        out.message,
        "could not find all clusters needed as specified by the scheduling policy, found 1 cluster(s) instead"
    );
    assert_eq!(reason_of(&out.filtered, "b"), "ClusterUnschedulable, cluster is not eligible: cluster has not joined");
}

#[test]
fn pick_n_scale_out_keeps_previous_choices() {
    let clusters = fleet(&["a", "b", "c", "d", "e"]);
    let first = run(&pick_n(2), None, &clusters, &[]);
    let mut bindings = apply(&[], &first.actions, SNAP);
    bind_all(&mut bindings);
    let second = run(&pick_n(2), Some(4), &clusters, &bindings);
    assert_eq!(second.chosen.len(), 4);
    for d in &first.chosen {
        assert!(names(&second.chosen).contains(&d.cluster_name.as_str()));
    }
    assert_eq!(creates(&second).len(), 2, "only the new ones: {:?}", second.actions);
    assert!(second.actions.iter().all(|a| matches!(a, BindingAction::Create { .. })));
}

#[test]
fn pick_n_scale_in_drops_scheduled_first_then_lowest_score_then_smallest_name() {
    let clusters = fleet(&["a", "b", "c", "d", "e"]);
    let bindings = [
        binding("a", STATE_BOUND, SNAP, score(5, 0)),
        binding("b", STATE_BOUND, SNAP, score(1, 0)),
        binding("c", STATE_BOUND, SNAP, score(1, 0)),
        binding("d", STATE_SCHEDULED, SNAP, score(100, 1)),
        binding("e", STATE_BOUND, SNAP, score(0, 1)),
    ];
    let out = run(&pick_n(5), Some(4), &clusters, &bindings);
    assert_eq!(unschedules(&out), ["d"], "not yet bound goes first");
    let out = run(&pick_n(5), Some(2), &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "e"], "spread score first, then affinity, then the smaller name");
    assert_eq!(unschedules(&out), ["b", "c", "d"]);
    assert!(out.fulfilled);
    assert!(out.actions.iter().all(|a| matches!(a, BindingAction::Unschedule { .. })));
}

#[test]
fn pick_n_never_evicts_on_label_taint_or_health_changes() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 2, "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
            {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}));
    let clusters = [
        cluster("a", &[("env", "dev")]),
        with_taint(cluster("b", &[("env", "prod")]), "maintenance", "true"),
        ineligible(cluster("c", &[("env", "prod")]), "cluster is not healthy (HeartbeatTimeout)"),
        cluster("d", &[("env", "prod")]),
    ];
    let bindings = [binding("a", STATE_BOUND, SNAP, score(0, 0)), binding("c", STATE_BOUND, SNAP, score(0, 0))];
    let out = run(&p, None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "c"]);
    assert!(out.actions.is_empty(), "{:?}", out.actions);
}

#[test]
fn required_affinity_is_judged_before_eligibility() {
    // KubeFleet's filter order: a cluster that fails both is reported as
    // not matching, as KubeFleet's scheduler reports it.
    let required = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
        {"labelSelector": {"matchLabels": {"env": "prod"}}}]}});
    let clusters = [
        ineligible(cluster("a", &[("env", "dev")]), "cluster is not healthy (HeartbeatTimeout)"),
        ineligible(cluster("b", &[("env", "prod")]), "cluster is not healthy (HeartbeatTimeout)"),
        cluster("c", &[("env", "prod")]),
    ];
    for placement_type in ["PickAll", "PickN"] {
        let p = policy(json!({"placementType": placement_type, "numberOfClusters": 2,
            "affinity": {"clusterAffinity": required.clone()}}));
        let out = run(&p, None, &clusters, &[]);
        assert_eq!(names(&out.chosen), ["c"], "{placement_type}");
        assert_eq!(
            reason_of(&out.filtered, "a"),
            "ClusterUnschedulable, cluster does not match with any of the required cluster affinity terms",
            "{placement_type}"
        );
        assert_eq!(
            reason_of(&out.filtered, "b"),
            "ClusterUnschedulable, cluster is not eligible: cluster is not healthy (HeartbeatTimeout)",
            "{placement_type}"
        );
    }
}

#[test]
fn pick_n_replaces_a_leaving_cluster() {
    let clusters = [cluster("a", &[]), leaving(cluster("b", &[])), cluster("c", &[])];
    let bindings = [binding("a", STATE_BOUND, SNAP, score(0, 0)), binding("b", STATE_BOUND, SNAP, score(0, 0))];
    let out = run(&pick_n(2), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "c"]);
    assert_eq!(creates(&out), ["c"]);
    assert_eq!(unschedules(&out), ["b"]);
    assert_eq!(reason_of(&out.filtered, "b"), "ClusterUnschedulable, cluster is not eligible: cluster is leaving");
}

#[test]
fn pick_n_replaces_a_deleted_cluster() {
    let clusters = fleet(&["a", "c"]);
    let bindings = [binding("a", STATE_BOUND, SNAP, score(0, 0)), binding("gone", STATE_BOUND, SNAP, score(0, 0))];
    let out = run(&pick_n(2), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "c"]);
    assert_eq!(unschedules(&out), ["gone"]);
}

#[test]
fn policy_change_keeps_rechosen_bindings_with_an_update_not_a_create() {
    let clusters = fleet(&["a", "b", "c"]);
    let bindings = [binding("c", STATE_BOUND, OLD_SNAP, score(9, 9)), binding("b", STATE_BOUND, OLD_SNAP, None)];
    let out = run(&pick_n(1), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["c"], "scheduled from scratch");
    assert_eq!(
        out.actions,
        [
            BindingAction::Update {
                binding: "web-c".into(),
                cluster: "c".into(),
                decision: out.chosen[0].clone(),
                revive: false
            },
            BindingAction::Unschedule { binding: "web-b".into(), cluster: "b".into() },
        ]
    );
}

#[test]
fn on_equal_scores_a_policy_change_prefers_the_clusters_placed_before() {
    // KubeFleet's same-placement affinity: after spread and affinity
    // scores, a cluster with a binding of an older policy snapshot ranks
    // above one without, before names decide; so do the not-chosen ones.
    let clusters = fleet(&["a", "b", "c", "d"]);
    let bindings = [binding("a", STATE_BOUND, OLD_SNAP, score(0, 0)), binding("b", STATE_SCHEDULED, OLD_SNAP, None)];
    let out = run(&pick_n(3), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "b", "d"]);
    assert_eq!(names(&out.not_chosen), ["c"]);
    let out = run(&pick_n(1), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["b"], "b outranks a by name");
    assert_eq!(names(&out.not_chosen), ["a", "d", "c"]);
    // With spread constraints KubeFleet picks one cluster per cycle and
    // its first cycle drops the older bindings: they count for the first
    // pick only.
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 2,
        "topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]}));
    let clusters = [
        cluster("a", &[("zone", "1")]),
        cluster("b", &[("zone", "1")]),
        cluster("c", &[("zone", "2")]),
        cluster("d", &[("zone", "2")]),
    ];
    let older = [binding("a", STATE_BOUND, OLD_SNAP, score(0, 0)), binding("c", STATE_BOUND, OLD_SNAP, score(0, 0))];
    let out = run(&p, None, &clusters, &older);
    assert_eq!(names(&out.chosen), ["b", "c"]);
    // A higher affinity score still wins.
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}}}));
    let clusters = [cluster("a", &[]), cluster("b", &[]), cluster("c", &[("env", "prod")])];
    let out = run(&p, None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["c"]);
}

#[test]
fn an_unscheduled_binding_of_a_chosen_cluster_is_revived() {
    let bindings = [binding("a", STATE_UNSCHEDULED, SNAP, score(0, 0))];
    let out = run(&pick_n(1), None, &fleet(&["a"]), &bindings);
    assert!(matches!(&out.actions[..], [BindingAction::Update { revive: true, .. }]), "{:?}", out.actions);
}

#[test]
fn duplicate_bindings_of_one_cluster_keep_one() {
    let mut extra = binding("a", STATE_SCHEDULED, SNAP, score(0, 0));
    extra.name = "web-a-2".into();
    let bindings = [binding("a", STATE_UNSCHEDULED, SNAP, score(0, 0)), extra, binding("a", STATE_BOUND, SNAP, None)];
    let mut third = bindings[2].clone();
    third.name = "web-a-3".into();
    let bindings = [bindings[0].clone(), bindings[1].clone(), third];
    let out = run(&pick_n(1), None, &fleet(&["a"]), &bindings);
    // The active binding under the current snapshot with the first name is kept as is.
    assert_eq!(out.actions, [BindingAction::Unschedule { binding: "web-a-3".into(), cluster: "a".into() }]);
}

#[test]
fn a_second_pass_with_the_bindings_written_changes_nothing() {
    let clusters = fleet(&["a", "b", "c", "d"]);
    for p in [
        pick_n(2),
        policy(json!({"placementType": "PickAll"})),
        policy(json!({"placementType": "PickFixed", "clusterNames": ["a", "b"]})),
    ] {
        let first = run(&p, None, &clusters, &[]);
        let bindings = apply(&[], &first.actions, SNAP);
        let second = run(&p, None, &clusters, &bindings);
        assert!(second.actions.is_empty(), "{:?}", second.actions);
        assert_eq!(first.chosen, second.chosen);
    }
}

#[test]
fn pick_all_adds_a_joiner_and_does_not_evict_non_matching() {
    let p = policy(json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
            {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}));
    let clusters = [
        cluster("a", &[("env", "dev")]),
        ineligible(cluster("b", &[("env", "prod")]), "cluster is not healthy (HeartbeatTimeout)"),
        cluster("c", &[("env", "prod")]),
        cluster("d", &[("env", "dev")]),
    ];
    let bindings = [binding("a", STATE_BOUND, SNAP, None), binding("b", STATE_BOUND, SNAP, None)];
    let out = run(&p, None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a", "b", "c"]);
    assert_eq!(creates(&out), ["c"]);
    assert_eq!(out.actions.len(), 1);
    assert_eq!(
        reason_of(&out.filtered, "d"),
        "ClusterUnschedulable, cluster does not match with any of the required cluster affinity terms"
    );
    assert!(out.fulfilled);
}

#[test]
fn pick_all_drops_a_leaving_cluster_and_skips_ineligible_ones() {
    let clusters = [
        leaving(cluster("a", &[])),
        ineligible(cluster("b", &[]), "cluster is not healthy (HeartbeatTimeout)"),
        cluster("c", &[]),
    ];
    let bindings = [binding("a", STATE_BOUND, SNAP, None)];
    let out = run(&policy(json!({"placementType": "PickAll"})), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["c"]);
    assert_eq!(unschedules(&out), ["a"]);
    assert_eq!(
        reason_of(&out.filtered, "b"),
        "ClusterUnschedulable, cluster is not eligible: cluster is not healthy (HeartbeatTimeout)"
    );
    assert_eq!(names(&out.filtered), ["a", "b"]);
}

#[test]
fn pick_fixed_reports_missing_and_ineligible_clusters() {
    let p = policy(json!({"placementType": "PickFixed", "clusterNames": ["c", "a", "x", "b", "a"]}));
    let clusters = [
        cluster("a", &[]),
        ineligible(cluster("b", &[]), "cluster has not joined"),
        cluster("c", &[]),
        cluster("unlisted", &[]),
    ];
    let out = run(&p, None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["a", "c"]);
    assert_eq!(names(&out.filtered), ["b", "x"]);
    assert_eq!(reason_of(&out.filtered, "x"), "Specified cluster \"x\" is not found");
    assert_eq!(
        reason_of(&out.filtered, "b"),
        "Cluster \"b\" is not eligible for resource placement yet: cluster has not joined"
    );
    assert!(!out.fulfilled);
    assert_eq!(
        out.message,
        "could not find all clusters needed as specified by the scheduling policy, found 2 cluster(s) instead"
    );
}

#[test]
fn pick_fixed_keeps_an_unhealthy_cluster_but_not_a_leaving_one() {
    let p = policy(json!({"placementType": "PickFixed", "clusterNames": ["a", "b"]}));
    let clusters =
        [ineligible(cluster("a", &[]), "cluster is not healthy (HeartbeatTimeout)"), leaving(cluster("b", &[]))];
    let bindings = [binding("a", STATE_BOUND, SNAP, None), binding("b", STATE_BOUND, SNAP, None)];
    let out = run(&p, None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["a"]);
    assert_eq!(unschedules(&out), ["b"]);
    assert_eq!(
        reason_of(&out.filtered, "b"),
        "Cluster \"b\" is not eligible for resource placement yet: cluster is leaving"
    );
}

#[test]
fn pick_fixed_with_no_names_unschedules_everywhere_and_names_place_again() {
    let clusters = fleet(&["a", "b"]);
    let bindings = [binding("a", STATE_BOUND, SNAP, None), binding("b", STATE_BOUND, SNAP, None)];
    let empty = policy(json!({"placementType": "PickFixed", "clusterNames": []}));
    let out = run(&empty, None, &clusters, &bindings);
    assert!(out.chosen.is_empty(), "{:?}", out.chosen);
    assert!(out.filtered.is_empty(), "{:?}", out.filtered);
    assert_eq!(unschedules(&out), ["a", "b"]);
    assert!(out.fulfilled, "zero names asked for, zero chosen: fulfilled");

    let withdrawn = apply(&bindings, &out.actions, SNAP);
    let again = policy(json!({"placementType": "PickFixed", "clusterNames": ["b"]}));
    let out = run(&again, None, &clusters, &withdrawn);
    assert_eq!(names(&out.chosen), ["b"]);
    assert!(out.fulfilled);
    assert!(unschedules(&out).is_empty(), "{:?}", out.actions);
}

#[test]
fn target_clusters_lists_chosen_then_20_not_chosen_then_filtered() {
    let mut clusters: Vec<ClusterInfo> = (0..30).map(|i| cluster(&format!("c{i:02}"), &[])).collect();
    clusters.push(ineligible(cluster("bad", &[]), "cluster has not joined"));
    let out = run(&pick_n(2), None, &clusters, &[]);
    let targets = out.target_clusters();
    assert_eq!(targets.len(), 2 + 20 + 1);
    assert!(targets[..2].iter().all(|d| d.selected));
    assert_eq!(targets[2].cluster_name, "c27");
    assert_eq!(targets[22].cluster_name, "bad");
    let many: Vec<ClusterInfo> = (0..1500).map(|i| ineligible(cluster(&format!("x{i}"), &[]), "no")).collect();
    assert_eq!(run(&pick_n(1), None, &many, &[]).target_clusters().len(), 1000);
}

#[test]
fn a_leaving_cluster_is_never_eligible_even_without_a_reason() {
    let mut c = cluster("a", &[]);
    c.leaving = true;
    let out = run(&pick_n(1), None, &[c.clone()], &[]);
    assert_eq!(reason_of(&out.filtered, "a"), "ClusterUnschedulable, cluster is not eligible: cluster is leaving");
    let fixed = policy(json!({"placementType": "PickFixed", "clusterNames": ["a"]}));
    let out = run(&fixed, None, &[c], &[]);
    assert_eq!(
        reason_of(&out.filtered, "a"),
        "Cluster \"a\" is not eligible for resource placement yet: cluster is leaving"
    );
}
