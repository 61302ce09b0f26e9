//! ManifestWork delivery: what Fleet `Work`s a `ManifestWork` becomes, and
//! the ManifestWork status those Works' reports fold into.
//!
//! Why mirror into Works (rather than teach the agent's Work watch to serve
//! ManifestWorks): agents learn no second protocol and need no new
//! permission — a ManifestWork in the namespace named after cluster `c` is
//! turned by the leader into Works in `fleet-member-c`, which the agent of
//! `c` already watches, applies with the same appliers and reports on. One
//! apply path, one ledger, one set of availability rules for both APIs; the
//! translation is pure and lives here.
//!
//! Each manifest goes to the Work of its *class*: how it is updated (its
//! `manifestConfigs[].updateStrategy`) and whether it stays on the cluster
//! when the ManifestWork goes (`deleteOption`), because a Work's apply
//! strategy and delete option are Work-wide:
//!
//! | ManifestWork | Work |
//! | --- | --- |
//! | `Update` (default) | default apply strategy (client-side apply) |
//! | `ServerSideApply` (`force`) | `applyStrategy.type: ServerSideApply` (`force`) |
//! | `CreateOnly` | `whenToApply: IfNotDrifted`, `whenToTakeOver: Never`, and the manifest as first mirrored is kept: later template edits, cluster-side edits and an object that already existed are left alone; the agent's `FoundDrifts` and `NotTakenOver` read back as applied |
//! | `ReadOnly` | `applyStrategy.type: ReportDiff` (nothing is written) |
//! | `ServerSideApply` with `ignoreFields` | the same, and the Work's `ignoreFields` (its paths as JSON pointers) |
//! | with `feedbackRules` | the Work's `feedbackRules`: the agent reads the values into each manifest condition's `statusFeedback` |
//! | `executor` | the Work's `executor` (every Work of the ManifestWork): the agent applies a manifest only if the subject may, on the member |
//! | with `conditionRules` | `reportBackStrategy: Mirror` to `WorkAPI` (the hub evaluates the rules on the mirrored status, see [`status`]) |
//! | `Orphan`, or listed by `SelectivelyOrphan` | `deleteOptions.propagationPolicy: Abandon` |
//! | `Foreground` (default) | `Delete` |
//!
//! The common class (`Update`, deleted with the work) is the Work
//! `mw.<name>`; others add a suffix (`mw.<name>.create-only`,
//! `mw.<name>.orphan`, `mw.<name>.server-side-apply.options-1` (one Work per distinct set of
//! `ignoreFields` and `feedbackRules`), ...). Each Work is labelled with the ManifestWork's
//! name and the generation it was mirrored from, and owned by the
//! ManifestWork, so deleting the ManifestWork deletes its Works (and the
//! agent then removes or leaves the objects as their class says).
//!
//! Not translated (accepted, no effect): server-side apply's `fieldManager`. `ttlSecondsAfterFinished` is the
//! ManifestWork controller's (it deletes a completed ManifestWork).

pub mod rules;
mod status;

use std::collections::BTreeMap;

use fleet_api::ignore_paths;
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::ocm::manifestwork::{
    self, FeedbackRule, ManifestConfigOption, ManifestWorkSpec, ResourceIdentifier, CREATE_ONLY, DELETE_ORPHAN,
    DELETE_SELECTIVELY_ORPHAN, READ_ONLY, SERVER_SIDE_APPLY,
};
use fleet_api::typed::encode;
use fleet_api::work::{
    ApplyStrategy, DeleteOptions, IgnoreFields, ReportBackStrategy, ServerSideApplyConfig, WorkSpec, Workload,
    DESTINATION_WORK_API, IGNORE_ON_SPOKE_PRESENT, REPORT_BACK_MIRROR,
};
use fleet_api::{Object, ObjectMeta, OwnerReference};
use serde_json::Value;

pub use status::fold_status;

/// Label on a mirrored Work: the ManifestWork's name (its namespace is the
/// cluster, which the Work's namespace names).
pub const MANIFESTWORK_LABEL: &str = "ocm.kubernetes-fleet.io/manifestwork";
/// Label on a mirrored Work: the ManifestWork generation it was mirrored from.
pub const MANIFESTWORK_GENERATION_LABEL: &str = "ocm.kubernetes-fleet.io/manifestwork-generation";
/// Prefix of every Work mirrored from a ManifestWork.
pub const WORK_NAME_PREFIX: &str = "mw.";

/// How a manifest is updated on the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UpdateClass {
    /// `Update`: applied, and re-applied on every change.
    Update,
    /// `ServerSideApply`, with `force` or not.
    ServerSide { force: bool },
    /// `CreateOnly`: created if missing, then left alone.
    CreateOnly,
    /// `ReadOnly`: never written.
    ReadOnly,
}

/// A manifest's class: its update class, whether it is orphaned, and
/// which fields the agent leaves to the member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManifestClass {
    /// How it is updated.
    pub update: UpdateClass,
    /// Whether it stays on the cluster when the ManifestWork is deleted.
    pub orphan: bool,
    /// Its `ignoreFields` and `feedbackRules`: 0 for none, else the
    /// 1-based number of its distinct [`ManifestOptions`] in the
    /// ManifestWork (see [`classes_and_options`]).
    pub options: usize,
    /// Whether the agent mirrors its status back (it has condition rules,
    /// which the hub evaluates on that status).
    pub report: bool,
}

impl ManifestClass {
    /// The Work name suffix of the class (empty for the common class).
    fn suffix(&self) -> String {
        let update = match self.update {
            UpdateClass::Update => "",
            UpdateClass::ServerSide { force: false } => ".server-side-apply",
            UpdateClass::ServerSide { force: true } => ".server-side-apply-force",
            UpdateClass::CreateOnly => ".create-only",
            UpdateClass::ReadOnly => ".read-only",
        };
        let options = if self.options == 0 { String::new() } else { format!(".options-{}", self.options) };
        let report = if self.report { ".status" } else { "" };
        format!("{update}{options}{report}{}", if self.orphan { ".orphan" } else { "" })
    }

    /// The Work apply strategy of the class.
    fn apply_strategy(&self) -> Option<ApplyStrategy> {
        match self.update {
            UpdateClass::Update => None,
            UpdateClass::ServerSide { force } => Some(ApplyStrategy {
                type_: Some("ServerSideApply".into()),
                server_side_apply_config: Some(ServerSideApplyConfig { force }),
                ..ApplyStrategy::default()
            }),
            UpdateClass::CreateOnly => Some(ApplyStrategy {
                when_to_apply: Some("IfNotDrifted".into()),
                when_to_take_over: Some("Never".into()),
                ..ApplyStrategy::default()
            }),
            UpdateClass::ReadOnly => {
                Some(ApplyStrategy { type_: Some("ReportDiff".into()), ..ApplyStrategy::default() })
            }
        }
    }
}

/// Where one manifest of a ManifestWork went: its class's Work and its
/// position there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The Work's name.
    pub work: String,
    /// Its index in that Work's manifests.
    pub ordinal: usize,
    /// Its class.
    pub class: ManifestClass,
}

/// The `ignoreFields` and `feedbackRules` of a Work holding options
/// number `n` (none for 0) as a partial Work spec.
fn options_of(sets: &[ManifestOptions], n: usize) -> WorkSpec {
    let options = n.checked_sub(1).and_then(|i| sets.get(i)).cloned().unwrap_or_default();
    WorkSpec { ignore_fields: options.ignore_fields, feedback_rules: options.feedback_rules, ..WorkSpec::default() }
}

/// The name of the Work of `class` for the ManifestWork `name`.
pub fn work_name(name: &str, class: &ManifestClass) -> String {
    format!("{WORK_NAME_PREFIX}{name}{}", class.suffix())
}

/// The identity of a manifest as OCM's `resourceIdentifier` names it:
/// group, plural resource, namespace, name.
pub fn identifier_of(manifest: &Value) -> ResourceIdentifier {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let api_version = text(manifest.get("apiVersion"));
    let kind = text(manifest.get("kind"));
    let group = fleet_api::object::group_of(&api_version).to_string();
    let resource = fleet_api::kinds::lookup_group_kind(&group, &kind)
        .map(|k| k.plural.to_string())
        .unwrap_or_else(|| format!("{}s", kind.to_ascii_lowercase()));
    let metadata = manifest.get("metadata");
    ResourceIdentifier {
        group,
        resource,
        name: text(metadata.and_then(|m| m.get("name"))),
        namespace: text(metadata.and_then(|m| m.get("namespace"))),
    }
}

/// Whether an option's identifier names `id` (an empty namespace in the
/// option matches cluster-scoped objects only, as OCM does).
fn names(option: &ResourceIdentifier, id: &ResourceIdentifier) -> bool {
    option.group == id.group
        && option.resource == id.resource
        && option.name == id.name
        && option.namespace == id.namespace
}

/// The `ignoreFields` of a server-side applied manifest's config, as a
/// Work holds them: JSON paths turned into pointers (admission refused any
/// that do not parse), `OnSpokePresent` when no condition is given.
fn ignore_fields_of(config: Option<&ManifestConfigOption>) -> Vec<IgnoreFields> {
    let Some(ssa) = config.and_then(|c| c.update_strategy.as_ref()).and_then(|u| u.server_side_apply.as_ref()) else {
        return Vec::new();
    };
    ssa.ignore_fields
        .iter()
        .map(|f| {
            let from_paths = f.json_paths.iter().filter_map(|p| ignore_paths::parse_json_path(p).ok());
            let from_pointers = f.json_pointers.iter().filter_map(|p| ignore_paths::parse_pointer(p).ok());
            IgnoreFields {
                condition: f.condition.clone().unwrap_or_else(|| IGNORE_ON_SPOKE_PRESENT.to_string()),
                json_pointers: from_paths.chain(from_pointers).map(|t| ignore_paths::to_pointer(&t)).collect(),
            }
        })
        .collect()
}

/// What a Work holds for all its manifests besides how they are applied:
/// the fields left to the member and the status feedback rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManifestOptions {
    /// Server-side apply's `ignoreFields`, as pointers.
    pub ignore_fields: Vec<IgnoreFields>,
    /// `feedbackRules`.
    pub feedback_rules: Vec<FeedbackRule>,
}

/// The class of each manifest of `spec`, in manifest order, and the
/// distinct options their `options` numbers name (number `n` is
/// `options[n - 1]`, numbered in manifest order).
pub fn classes_and_options(spec: &ManifestWorkSpec) -> (Vec<ManifestClass>, Vec<ManifestOptions>) {
    let policy = spec.delete_option.as_ref().and_then(|d| d.propagation_policy.as_deref());
    let orphaned: Vec<&ResourceIdentifier> = match (policy, &spec.delete_option) {
        (Some(DELETE_SELECTIVELY_ORPHAN), Some(d)) => {
            d.selectively_orphan.iter().flat_map(|s| &s.orphaning_rules).collect()
        }
        _ => Vec::new(),
    };
    let mut sets: Vec<ManifestOptions> = Vec::new();
    let classes = spec
        .workload
        .manifests
        .iter()
        .map(|manifest| {
            let id = identifier_of(manifest);
            let config: Option<&ManifestConfigOption> =
                spec.manifest_configs.iter().find(|c| names(&c.resource_identifier, &id));
            let strategy = config.and_then(|c| c.update_strategy.as_ref());
            let update = match strategy.and_then(|s| s.type_.as_deref()) {
                Some(SERVER_SIDE_APPLY) => UpdateClass::ServerSide {
                    force: strategy.and_then(|s| s.server_side_apply.as_ref()).is_some_and(|c| c.force),
                },
                Some(CREATE_ONLY) => UpdateClass::CreateOnly,
                Some(READ_ONLY) => UpdateClass::ReadOnly,
                _ => UpdateClass::Update,
            };
            let orphan = policy == Some(DELETE_ORPHAN) || orphaned.iter().any(|o| names(o, &id));
            let options = ManifestOptions {
                ignore_fields: match update {
                    UpdateClass::ServerSide { .. } => ignore_fields_of(config),
                    _ => Vec::new(),
                },
                feedback_rules: config.map(|c| c.feedback_rules.clone()).unwrap_or_default(),
            };
            let options = if options == ManifestOptions::default() {
                0
            } else {
                match sets.iter().position(|s| *s == options) {
                    Some(i) => i + 1,
                    None => {
                        sets.push(options);
                        sets.len()
                    }
                }
            };
            let report = config.is_some_and(|c| !c.condition_rules.is_empty());
            ManifestClass { update, orphan, options, report }
        })
        .collect();
    (classes, sets)
}

/// The `manifestConfigs` entry naming `manifest`, if any.
pub fn config_of<'a>(spec: &'a ManifestWorkSpec, manifest: &Value) -> Option<&'a ManifestConfigOption> {
    let id = identifier_of(manifest);
    spec.manifest_configs.iter().find(|c| names(&c.resource_identifier, &id))
}

/// The class of each manifest of `spec`, in manifest order.
pub fn classes(spec: &ManifestWorkSpec) -> Vec<ManifestClass> {
    classes_and_options(spec).0
}

/// Where each manifest of `spec` goes, in manifest order.
pub fn placements(name: &str, spec: &ManifestWorkSpec) -> Vec<Placed> {
    let mut counts: BTreeMap<ManifestClass, usize> = BTreeMap::new();
    classes(spec)
        .into_iter()
        .map(|class| {
            let count = counts.entry(class).or_insert(0);
            let ordinal = *count;
            *count += 1;
            Placed { work: work_name(name, &class), ordinal, class }
        })
        .collect()
}

/// The Works the ManifestWork `mw` (in the namespace named after its
/// cluster) becomes. `existing` are its Works as stored: a `CreateOnly`
/// manifest keeps the content it was first mirrored with.
pub fn mirror_works(mw: &Object, existing: &[Object]) -> Vec<Object> {
    let spec = manifestwork::spec_of(mw);
    let option_sets = classes_and_options(&spec).1;
    let executor = spec.executor.clone();
    let cluster = mw.metadata.namespace.clone().unwrap_or_default();
    let mut works: BTreeMap<String, (ManifestClass, Vec<Value>)> = BTreeMap::new();
    for (manifest, placed) in spec.workload.manifests.iter().zip(placements(&mw.metadata.name, &spec)) {
        let content = match placed.class.update {
            UpdateClass::CreateOnly => {
                first_mirrored(existing, &placed.work, manifest).unwrap_or_else(|| manifest.clone())
            }
            _ => manifest.clone(),
        };
        works.entry(placed.work).or_insert_with(|| (placed.class, Vec::new())).1.push(content);
    }
    works
        .into_iter()
        .map(|(name, (class, manifests))| {
            let spec = WorkSpec {
                workload: Workload { manifests },
                apply_strategy: class.apply_strategy(),
                delete_options: class.orphan.then(|| DeleteOptions { propagation_policy: Some("Abandon".into()) }),
                // Condition rules are evaluated on the hub, on the status
                // the agent mirrors (bounded in rate and size by the agent).
                report_back_strategy: class.report.then(|| ReportBackStrategy {
                    type_: Some(REPORT_BACK_MIRROR.into()),
                    destination: Some(DESTINATION_WORK_API.into()),
                }),
                // Every Work applies as the ManifestWork's executor; the
                // agent checks the subject's permissions on the member.
                executor: executor.clone(),
                ..options_of(&option_sets, class.options)
            };
            let mut object = Object {
                api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"),
                kind: "Work".into(),
                metadata: ObjectMeta {
                    name,
                    namespace: Some(member_namespace(&cluster)),
                    owner_references: vec![OwnerReference::controller_of(mw)],
                    ..ObjectMeta::default()
                },
                rest: Default::default(),
            };
            object.metadata.labels.insert(MANIFESTWORK_LABEL.into(), mw.metadata.name.clone());
            object.metadata.labels.insert(MANIFESTWORK_GENERATION_LABEL.into(), mw.metadata.generation.to_string());
            object.rest.insert("spec".into(), encode(&spec));
            object
        })
        .collect()
}

/// The content a stored Work `work` holds for the manifest with the same
/// identity as `manifest`, if any.
fn first_mirrored(existing: &[Object], work: &str, manifest: &Value) -> Option<Value> {
    let stored = existing.iter().find(|w| w.metadata.name == work)?;
    let id = identifier_of(manifest);
    let kind = manifest.get("kind");
    fleet_api::work::spec_of(stored)
        .workload
        .manifests
        .into_iter()
        .find(|m| m.get("kind") == kind && identifier_of(m) == id)
}

#[cfg(test)]
mod tests;
