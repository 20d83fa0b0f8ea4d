//! `airlock-puller plan`: what a sync would create, update (with field-level diffs from
//! server-side dry-run), prune and leave alone, what policy would refuse and which parts it
//! would skip. It verifies exactly as a sync does but takes no Lease and writes nothing: no
//! objects, no state, no report. An unchanged bundle is planned too, which shows drift;
//! while the bundle's active window is closed the heading says so, since a sync would then
//! change nothing, and the plan shows what it would do once the window opens. A version a
//! sync would refuse before its first write (objects it would take over, a mass prune it
//! would hold) is planned all the same, its refusal in the heading in the sync's words,
//! and the plan exits as that sync would: 3 (`airlock_cli::exit::REJECTED`).

use std::fmt::Write;

use airlock_cli::KubeArgs;
use jiff::Timestamp;

use super::sync::names;
use crate::config::SyncArgs;
use crate::engine::{self, Outcome};
use crate::identities::Identities;
use crate::kept::failures;
use crate::kept::state_store::StateStore;
use crate::reports::failure::Failure;
use crate::reports::report::{action_name, redacted};
use crate::source;
use crate::trusted::Trusted;
use crate::window::WindowState;

/// Checks the flags, plans a sync and returns the text to print, with the rejection a
/// sync would stop at, which decides the exit code as it would the sync's.
pub async fn plan(args: &SyncArgs, kube: &KubeArgs) -> Result<(String, Option<Failure>), Failure> {
    let settings = args.check(kube)?;
    let client = settings.kube.client().await.map_err(|e| Failure::KubeClient(e.to_string()))?;
    let (mut state_store, state) = StateStore::load(&client, &names(&settings), &settings.cluster).await?;
    let trusted = Trusted::derive(&settings.keyring, state.as_ref(), settings.max_validity)?;
    let identities = Identities::derive(&settings.identities, state.as_ref());
    let floor = trusted.floor(state.as_ref());
    let store = source::open(&settings.source).await?;
    let (bundle, new) = source::fetch_content(&*store, &settings.cluster, &trusted, &floor, Some(identities.all())).await?;
    let mut engine_settings = settings.engine(bundle.predicate());
    engine_settings.decrypts = identities.decrypts();
    engine_settings.held_back = failures::held_back(state.as_ref().map_or(&[][..], |s| &s.failures), &bundle.predicate().profiles);
    let desired = engine::desired(&bundle, &engine_settings)?;
    let previous = state_store.inventory(state.as_ref()).await?;
    engine_settings.tenants =
        super::sync::tenants::connect(&settings, &super::sync::tenants::by_part(&bundle.predicate().profiles, &previous)).await?;
    let plan = engine::plan(&client, desired, &previous, &engine_settings).await?;
    let applied = state.as_ref().map_or("none".to_string(), |s| s.version.to_string());
    let mut heading = format!(
        "cluster {}: applied version {applied}, bundle version {} ({})",
        settings.cluster,
        bundle.predicate().version,
        if new { "new" } else { "already applied; checking for drift" }
    );
    if let Some(window) = WindowState::of(bundle.predicate().settings.active_window.as_ref(), &floor, Timestamp::now()) {
        let now = if window.open { "" } else { ": a sync now changes nothing; below is what it does once the window opens" };
        let _ = write!(heading, "\nactive window {window}{now}");
    }
    let refusal = plan.refusal.map(Failure::from);
    if let Some(refusal) = &refusal {
        let _ = write!(heading, "\n{}", refused(refusal));
    }
    Ok((render(&heading, &plan.outcome), refusal))
}

/// The heading's line for a version a sync would refuse: in the sync's words.
fn refused(refusal: &Failure) -> String {
    format!("REFUSED: {refusal}\na sync of this version changes nothing; below is what it would do were it allowed")
}

/// A table of every object, then the diffs.
fn render(heading: &str, outcome: &Outcome) -> String {
    let results: Vec<_> = outcome.results.iter().map(redacted).collect();
    let rows: Vec<[String; 3]> = results.iter().map(|r| [action_name(r.action), r.id.to_string(), r.profile.clone()]).collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).chain([7]).max().unwrap_or(0);
    let (w0, w1) = (width(0), width(1));
    let mut out = format!("{heading}\n\n{:w0$}  {:w1$}  PROFILE\n", "ACTION", "OBJECT");
    for [action, object, profile] in &rows {
        let _ = writeln!(out, "{action:w0$}  {object:w1$}  {profile}");
    }
    for r in results.iter().filter(|r| r.detail.is_some()) {
        let _ = write!(out, "\n--- {} {}\n{}\n", action_name(r.action), r.id, r.detail.as_deref().unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Action, EngineError};
    use crate::reports::report::test_result;

    #[test]
    fn renders_a_table_and_diffs_without_secret_data() {
        let outcome = Outcome {
            results: vec![
                test_result("ConfigMap", "a", Action::WouldCreate, None),
                test_result("ConfigMap", "b", Action::WouldConfigure, Some("data.port: 80 -> 8080")),
                test_result("Secret", "s", Action::WouldConfigure, Some("data.token: old -> new")),
            ],
            ..Outcome::default()
        };
        let text = render("cluster fleet/edge-1", &outcome);
        assert!(text.contains("wouldCreate     ConfigMap web/a  ClusterProfile.web"), "{text}");
        assert!(text.contains("--- wouldConfigure ConfigMap web/b\ndata.port: 80 -> 8080"), "{text}");
        assert!(!text.contains("old -> new"), "{text}");
    }

    #[test]
    fn a_refusal_is_told_in_the_sync_s_words_and_exits_as_the_sync_would() {
        let held = EngineError::MassPrune { pruned: 11, inventory: 13, percent: 50 };
        let refusal = Failure::from(held.clone());
        let line = refused(&refusal);
        assert!(line.starts_with(&format!("REFUSED: {held}\n")), "{line}");
        assert_eq!(refusal.exit_code(), airlock_cli::exit::REJECTED);
    }
}
