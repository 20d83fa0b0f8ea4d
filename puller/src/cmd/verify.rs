//! `airlock-puller verify`: checks a store's bundle offline, every step of spec section 8,
//! and prints what it holds: version, times, signers, keyring, the active window (open or
//! closed now), profiles with their settings and notes, objects, and the definitions it
//! asks the puller to evaluate (kind, name, digest, selector count). It touches no
//! cluster. Without `--cluster` it checks every cluster the store holds, which is how a
//! tarball is checked before it is carried across the gap.

use std::fmt::Write;
use std::path::PathBuf;

use airlock_bundle::age::Identity;
use airlock_bundle::statement::{Evaluation, rfc3339};
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Floor, VerifiedBundle};
use airlock_store::Store;
use clap::Args;
use jiff::Timestamp;

use crate::config::{SourceArgs, read_capped};
use crate::engine::{self, NamespacePolicy};
use crate::kept::gz_secret;
use crate::kept::state::State;
use crate::reports::failure::Failure;
use crate::source;
use crate::trusted::Trusted;
use crate::window::WindowState;

/// A state file is the state Secret's `state.json.gz`, capped like the Secret itself.
const STATE_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Refuse bundles older than this version (rollback check without a state).
    #[arg(long, conflicts_with = "state")]
    pub floor: Option<u64>,
    /// A copy of the state Secret's `state.json.gz`: verify against its floor and keyring,
    /// as the puller would.
    #[arg(long)]
    pub state: Option<PathBuf>,
}

/// Verifies every cluster asked for and returns the text to print, with the failure
/// that decides the exit code (a rejection over an error) if any cluster failed.
pub async fn verify(args: &VerifyArgs) -> Result<(String, Option<Failure>), Failure> {
    let settings = args.source.check()?;
    let state = args.state.as_deref().map(read_state).transpose()?;
    let trusted = Trusted::derive(&settings.keyring, state.as_ref(), settings.max_validity)?;
    let store = source::open(&settings.source).await?;
    let clusters = match (&settings.cluster, &state) {
        (Some(c), _) => vec![c.clone()],
        (None, Some(s)) => vec![s.cluster.parse().map_err(Failure::StateCluster)?],
        (None, None) => store.clusters(&Limits::SPEC).await.map_err(source::SourceError::Store)?,
    };
    if clusters.is_empty() {
        return Err(Failure::NoBundles { store: store.describe() });
    }
    let floor = trusted.floor(state.as_ref());
    let mut out = String::new();
    let mut worst: Option<Failure> = None;
    for cluster in &clusters {
        match one(&*store, cluster, &trusted, &floor, args.floor, &settings.identities).await {
            Ok(text) => out.push_str(&text),
            Err(f) => {
                let label = if f.is_rejection() { "REFUSED" } else { "FAILED" };
                let _ = writeln!(out, "cluster {cluster}: {label}: {f}\n");
                if worst.as_ref().is_none_or(|w| !w.is_rejection() && f.is_rejection()) {
                    worst = Some(f);
                }
            }
        }
    }
    Ok((out, worst))
}

fn read_state(path: &std::path::Path) -> Result<State, Failure> {
    let bytes = read_capped(path, STATE_FILE_BYTES).map_err(|e| Failure::Settings(format!("--state: {e:#}")))?;
    gz_secret::decode(&bytes).map_err(|reason| Failure::StateFile { path: path.to_path_buf(), reason })
}

async fn one(
    store: &dyn Store,
    cluster: &ClusterId,
    trusted: &Trusted,
    floor: &Floor,
    min_version: Option<u64>,
    identities: &[Identity],
) -> Result<String, Failure> {
    // Without an identity the encrypted files are verified as they are stored (steps
    // 11-13) but not opened: a store can be checked before it is carried, by anyone.
    let open = (!identities.is_empty()).then_some(identities);
    let (bundle, new) = source::fetch_content(store, cluster, trusted, floor, open).await?;
    let applied = !new;
    let version = bundle.predicate().version;
    if let Some(min) = min_version.filter(|min| version < *min) {
        return Err(Failure::BelowFloor { version, floor: min });
    }
    describe(cluster, &bundle, applied, floor, open.is_some())
}

fn describe(cluster: &ClusterId, bundle: &VerifiedBundle, applied: bool, floor: &Floor, decrypted: bool) -> Result<String, Failure> {
    let env = bundle.envelope();
    let p = bundle.predicate();
    let mut out = String::new();
    let _ = writeln!(out, "cluster {cluster}: OK{}", if applied { " (the version the state says is applied)" } else { "" });
    let _ = writeln!(out, "  version:   {}", p.version);
    let _ = writeln!(out, "  digest:    {}", env.digest());
    let _ = writeln!(out, "  issuedAt:  {}", rfc3339::format(&p.issued_at));
    let _ = writeln!(out, "  expires:   {}", rfc3339::format(&p.expires));
    let keyring = env.keyring();
    let root = keyring.root().map_or_else(|| "its own root".to_string(), |r| format!("root {} of {}", r.threshold(), r.keys().len()));
    let _ = writeln!(out, "  keyring:   version {}, threshold {}, {root}", keyring.version(), keyring.threshold());
    let _ = writeln!(out, "  signers:   {}", env.signers().join(", "));
    if let Some(ns) = &p.settings.watch_namespaces {
        let _ = writeln!(out, "  watchNamespaces: {}", ns.join(","));
    }
    if let Some(recipients) = &p.settings.recipients {
        let sealed = p.files.iter().filter(|f| f.plaintext.is_some()).count();
        let state = if decrypted { "decrypted" } else { "not decrypted: no --age-identity" };
        let _ = writeln!(out, "  encrypted: {sealed} files to {} ({state})", recipients.join(", "));
    }
    if let Some(window) = WindowState::of(p.settings.active_window.as_ref(), floor, Timestamp::now()) {
        let _ = writeln!(out, "  activeWindow: {window} now");
    }
    let _ = writeln!(out, "  profiles:");
    for profile in &p.profiles {
        let deps = if profile.depends_on.is_empty() { "-".to_string() } else { profile.depends_on.join(",") };
        let _ = write!(out, "    {}  syncMode={:?} tier={} dependsOn={deps}", profile.name, profile.sync_mode, profile.tier);
        if profile.continue_on_error {
            out.push_str(" continueOnError");
        }
        if let Some(limit) = profile.max_consecutive_failures {
            let _ = write!(out, " maxConsecutiveFailures={limit}");
        }
        if profile.reloader {
            out.push_str(" reloader");
        }
        if !profile.drift_exclusions.is_empty() {
            let _ = write!(out, " driftExclusions={}", profile.drift_exclusions.len());
        }
        out.push('\n');
        for (list, check) in profile.checks.all() {
            let _ = writeln!(out, "      check: {list} {:?}", check.name);
        }
        for note in &profile.notes {
            let support = serde_json::to_value(note.support).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            let _ = writeln!(out, "      note: {} {support}: {}", note.field, note.detail);
        }
        if let Some(failure) = &profile.failure {
            let kept = failure.kept_from.map_or("no files".to_string(), |v| format!("the content of version {v}"));
            let _ = writeln!(out, "      render failed: {} (the part holds {kept})", failure.message);
        }
    }
    let settings = engine::Settings {
        cluster: cluster.to_string(),
        watch_namespaces: None,
        namespace_policy: NamespacePolicy::Reject,
        own_namespace: None,
        cluster_scoped: p.settings.cluster_scoped.clone(),
        dry_run: true,
        concurrency: 1,
        held_back: Default::default(),
        decrypts: decrypted,
        allow_mass_prune: false,
        protected_namespace_keys: Vec::new(),
        allow_endpoints: false,
        tenants: engine::Tenants::default(),
    };
    if p.settings.recipients.is_some() && !decrypted {
        out.push_str("  objects: not listed, as some files are encrypted\n");
    } else {
        let objects = engine::listed(bundle, &settings)?;
        let _ = writeln!(out, "  objects ({}):", objects.len());
        for (id, source) in &objects {
            let _ = writeln!(out, "    {id}  ({source})");
        }
    }
    write_evaluations(&mut out, &p.settings.evaluations);
    out.push('\n');
    Ok(out)
}

/// One line per definition the puller evaluates and reports back (spec 5.14), so an
/// operator can match the digests a report names to the bundle; nothing when it carries none.
fn write_evaluations(out: &mut String, evaluations: &[Evaluation]) {
    if evaluations.is_empty() {
        return;
    }
    let _ = writeln!(out, "  evaluations ({}):", evaluations.len());
    for e in evaluations {
        let _ = writeln!(out, "    {} {}  {}  selectors={}", e.kind.name(), e.name, e.digest(), e.selectors.len());
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::statement::{EvaluationKind, Selection, Selector};

    use super::*;

    #[test]
    fn lists_each_evaluation_with_its_kind_digest_and_selector_count() {
        let objects = Selection { label_selector: "sveltos=fv".into(), ..Selection::every("", "v1", "Service") };
        let service = Evaluation {
            kind: EvaluationKind::Classifier,
            name: "sveltos-service".into(),
            selectors: vec![Selector { objects, script: None, cel: vec![] }],
            aggregate: None,
            collect_resources: false,
        };
        let version_only = Evaluation { selectors: vec![], name: "k8s-1-20".into(), ..service.clone() };
        let mut out = String::new();
        write_evaluations(&mut out, &[service.clone(), version_only.clone()]);
        let expected = format!(
            "  evaluations (2):\n    Classifier sveltos-service  {}  selectors=1\n    Classifier k8s-1-20  {}  selectors=0\n",
            service.digest(),
            version_only.digest()
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn prints_nothing_for_a_bundle_without_evaluations() {
        let mut out = String::new();
        write_evaluations(&mut out, &[]);
        assert_eq!(out, "");
    }
}
