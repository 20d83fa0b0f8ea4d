//! The preview behind a plan: what a sync would do, writing nothing. Every desired object
//! goes through a server-side dry-run apply compared with its live copy (a field-level
//! diff), except OneTime objects applied before, which a sync never touches again; objects
//! the policy refuses are reported, parts held back are shown skipped, and prune
//! candidates are checked as a sync would check them. A create-only object previews as
//! created when absent and unchanged otherwise.
//!
//! The steps a sync would take are decided as a sync decides them, and go through the
//! same checks before the first write (`ownership`): a version a sync would refuse, for
//! objects it would take over or a mass prune it would hold, is previewed all the same,
//! with the refusal beside it.

use std::collections::HashSet;

use crate::engine::api::kube_api::Api;
use crate::engine::apply::stages;
use crate::engine::model::error::EngineError;
use crate::engine::model::object::InventoryEntry;
use crate::engine::model::outcome::Finished;
use crate::engine::model::settings::Settings;
use crate::engine::model::step::Step;
use crate::engine::plan::gate::Held;
use crate::engine::plan::hook;
use crate::engine::plan::scope::Target;
use crate::engine::prune::by_inventory;
use crate::engine::prune::ownership;

/// The inventory is the previous one: nothing changes. With it, the rejection a sync of
/// this version would stop at before its first write, if it would.
pub(crate) async fn plan(
    api: &Api,
    targets: Vec<Target>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<(Finished, Option<EngineError>), EngineError> {
    let by_key = stages::index(previous);
    let held = Held::new(&settings.held_back, targets.iter().map(|t| &t.object));
    let operations = hook::operations(targets.iter().map(|t| &t.object).filter(|o| held.reason(o).is_none()), previous);
    let (mut work, checks) = stages::steps(targets, &by_key, &held, &operations);
    // Only objects of the inventory are checked for drift, and the ownership check never
    // reads those: whether they drifted changes nothing it decides.
    work.extend(checks.into_iter().map(|t| (t, Step::Unchanged)));
    let selection = by_inventory::select_for(previous, &work, &held, settings);
    let refusal = match ownership::check(api, &mut work, &selection, previous, settings).await {
        Ok(_) => None,
        Err(e) if e.is_rejection() => Some(e),
        Err(e) => return Err(e),
    };
    let work: Vec<_> = work
        .into_iter()
        .map(|(t, step)| match step {
            Step::Skip(_) | Step::Keep(_) => (t, step),
            _ => (t, Step::Preview),
        })
        .collect();
    let run = stages::execute(api, settings, work, &by_key).await?;
    let mut results = run.results;
    results.extend(by_inventory::run(api, selection, settings, true, &HashSet::new()).await.results);
    Ok(((results, previous.to_vec()), refusal))
}
