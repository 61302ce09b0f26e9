//! A placement being deleted while a finalizer holds it: it is withdrawn at
//! once. Its bindings and snapshots are deleted (the bindings' Works go
//! with them, so members remove what it placed) and the placement stays
//! until its finalizers are removed, as KubeFleet's controllers clean up
//! before releasing a deleted placement.

use fleet_api::Object;
use fleet_statemachine::Store;

use super::{objects, ControllerError, Next, Step, View};

/// The deletes that withdraw `placement`, or done when nothing is left.
pub fn withdraw(store: &Store, placement: Object) -> Result<Next, ControllerError> {
    let view = View::children_of(store, placement)?;
    let ops: Vec<_> = view
        .bindings
        .iter()
        .chain(&view.resource_snapshots)
        .chain(&view.policy_snapshots)
        .map(objects::delete)
        .collect();
    if ops.is_empty() {
        return Ok(Next::Done { recheck_after: None });
    }
    Ok(Next::Write(Box::new(Step { ops, events: Vec::new(), placement: view.placement })))
}
