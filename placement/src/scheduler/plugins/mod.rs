//! One plugin per scheduling concern.

mod affinity;
mod eligibility;
mod hash;
mod namespaces;
mod selectors;
mod taints;
mod topology;

pub use affinity::{sorter_share, PreferredAffinity, RequiredAffinity, REASON_NO_TERM_MATCHES};
pub use eligibility::Eligibility;
pub use hash::{Fnv, FnvBuild};
pub use namespaces::{NamespaceAffinity, REASON_NAMESPACE_MISSING, REASON_NO_NAMESPACES};
pub use selectors::{CompiledLabelSelector, CompiledTerm};
pub use taints::{taint_text, tolerates, Taints};
pub use topology::{SpreadTerm, TopologySpread, SCHEDULE_ANYWAY_PENALTY};
