//! The preview behind a plan: what a sync would do, writing nothing. Every desired object
//! goes through a server-side dry-run apply compared with its live copy (a field-level
//! diff), except OneTime objects applied before, which a sync never touches again; objects
//! the policy refuses are reported, parts held back are shown skipped, and prune
//! candidates are checked as a sync would check them. A create-only object previews as
//! created when absent and unchanged otherwise.

use std::collections::HashSet;

use super::apply;
use super::error::EngineError;
use super::gate::Held;
use super::kube_api::Api;
use super::object::InventoryEntry;
use super::outcome::Finished;
use super::prune;
use super::scope::Target;
use super::send::Step;
use super::settings::Settings;

/// The inventory is the previous one: nothing changes.
pub(super) async fn plan(
    api: &Api,
    targets: Vec<Target>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Finished, EngineError> {
    let by_key = apply::index(previous);
    let held = Held::new(&settings.held_back, targets.iter().map(|t| &t.object));
    let work: Vec<_> = targets
        .into_iter()
        .map(|t| {
            let step = match (held.reason(&t.object), apply::decide(&t.object, by_key.get(&t.object.id.key()).copied())) {
                (Some(why), _) => Step::Skip(why.to_string()),
                (None, Some(keep @ Step::Keep(_))) => keep,
                _ => Step::Preview,
            };
            (t, step)
        })
        .collect();
    let selection = prune::select_for(previous, &work, &held, settings);
    let run = apply::execute(api, settings, work, &by_key).await?;
    let mut results = run.results;
    results.extend(prune::run(api, selection, settings, true, &HashSet::new()).await.results);
    Ok((results, previous.to_vec()))
}
