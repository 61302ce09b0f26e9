//! One plugin per scheduling concern.

mod affinity;
mod eligibility;
mod hash;
mod taints;
mod topology;

pub use affinity::{sorter_share, PreferredAffinity, RequiredAffinity};
pub use eligibility::Eligibility;
pub use hash::{Fnv, FnvBuild};
pub use taints::{taint_text, tolerates, Taints};
pub use topology::TopologySpread;
