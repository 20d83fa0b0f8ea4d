//! A `helmCharts` entry's `options`, mapped onto what a management-side render honours,
//! with a [`FieldNote`] for every option set that it does not (spec 5.9), so no difference
//! from Sveltos passes unseen. `docs/helm.md` has the same table for operators.
//!
//! Entry point: [`read`]. Options are notes only when set away from Sveltos's default: a
//! profile saying `wait: false` loses nothing.

use airlock_bundle::statement::{FieldNote, Support};
use serde_json::Value;

use airlock_bundle::vocabulary::HookEvent;
use serde::Serialize;

/// The longest `timeout` the site accepts for a hook (spec 2.5.3).
const MAX_TIMEOUT_SECONDS: u64 = 86_400;

/// The Sveltos options that change what `helm template` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TemplateOptions {
    /// `!options.skipCRDs`: print the `crds/` directories.
    pub include_crds: bool,
    /// `!options.disableHooks`: print hook objects.
    pub hooks: bool,
    /// `options.skipSchemaValidation`: do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions { include_crds: true, hooks: true, skip_schema_validation: false }
    }
}

/// What the render honours of an entry's options, and notes on the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartOptions {
    pub template: TemplateOptions,
    /// `passCredentialsAll`, for the chart's `render::helm::Access`.
    pub pass_credentials_all: bool,
    /// `installOptions.createNamespace`: the release namespace is created when missing.
    pub create_namespace: bool,
    /// The hook events the site fires: install and upgrade hooks unless
    /// `installOptions.disableHooks` or `upgradeOptions.disableHooks`, test hooks only with
    /// `runTests`.
    pub fired_events: Vec<HookEvent>,
    /// Whether an `Uninstall` ships the chart's delete hooks for the site to fire
    /// (`uninstallOptions.disableHooks` false).
    pub delete_hooks: bool,
    /// `timeout`, in whole seconds rounded up: how long the site waits for a hook, and for
    /// the release's objects with `wait`.
    pub timeout_seconds: Option<u64>,
    /// `wait` (or `atomic`): the site waits until the release's objects are ready before
    /// its post- hooks; `Some(true)` with `waitForJobs`, until its Jobs completed too.
    pub wait: Option<bool>,
    /// The failed operations after which the site deletes the objects they created:
    /// `upgrade` with `upgradeOptions.cleanupOnFail`, both with `atomic`.
    pub cleanup_on_fail: Vec<&'static str>,
    /// `upgradeOptions.force`: an update the API server refuses is done by re-creating.
    pub force: bool,
    /// `upgradeOptions.upgradeCRDs`: the `crds/` CRDs are applied on every upgrade rather
    /// than created once.
    pub upgrade_crds: bool,
    /// `postRenderStrategy` other than `nohooks`: the profile's patches reach the hooks.
    pub patch_hooks: bool,
    /// `uninstallOptions.deletionPropagation`: how the site prunes the release's objects.
    pub deletion_propagation: Option<&'static str>,
    pub notes: Vec<FieldNote>,
}

/// How an option is treated; `detail` is the note's text.
enum Treatment {
    /// Changes the render; no note.
    Render,
    NotApplicable(&'static str),
}

const NO_RELEASE: &str = "no Helm release record is kept in pull mode: the bundle is the record";
/// What `atomic` cannot do at the site.
const NO_ROLLBACK: &str = "the site holds no earlier render to roll back to: a failed install or upgrade deletes the objects it created, waits as wait does, and the objects it changed keep the new version until the next run retries";

/// The treatment of each option path Sveltos defines (`spec.go`, v1beta1).
fn treatment(path: &str) -> Option<Treatment> {
    use Treatment::*;
    Some(match path {
        "skipCRDs" | "disableHooks" | "skipSchemaValidation" | "passCredentialsAll" | "installOptions.createNamespace" => Render,
        "timeout" | "runTests" | "installOptions.disableHooks" | "upgradeOptions.disableHooks" | "uninstallOptions.disableHooks" => Render,
        "wait" | "waitForJobs" | "postRenderStrategy" | "upgradeOptions.cleanupOnFail" | "upgradeOptions.force" => Render,
        "upgradeOptions.upgradeCRDs" => Render,
        "atomic" => Render,
        "disableOpenAPIValidation" => {
            NotApplicable("a client-only render validates nothing against a cluster; the API server validates on apply")
        }
        "enableClientCache" => NotApplicable("chart archives are always cached, by digest"),
        "dependencyUpdate" => NotApplicable("repository chart archives carry their dependencies"),
        "labels" | "description" => NotApplicable(NO_RELEASE),
        "installOptions.replace" | "installOptions.recoverAfterConsecutiveFailures" => NotApplicable(NO_RELEASE),
        "installOptions.takeOwnership" | "upgradeOptions.takeOwnership" => {
            NotApplicable("no Helm ownership annotations are written or checked; server-side apply owns the fields")
        }
        "upgradeOptions.recreate" => NotApplicable("deprecated in Sveltos and ignored by Helm 3 and 4"),
        "upgradeOptions.resetValues" | "upgradeOptions.reuseValues" | "upgradeOptions.resetThenReuseValues" => {
            NotApplicable("every publish renders with the profile's values; there are no stored values to reuse")
        }
        "upgradeOptions.maxHistory" | "uninstallOptions.keepHistory" => NotApplicable(NO_RELEASE),
        "upgradeOptions.subNotes" => NotApplicable("NOTES.txt is not rendered"),
        "uninstallOptions.deletionPropagation" => Render,
        _ => return None,
    })
}

/// Sveltos's default of an option, when it is not the type's zero.
fn is_default(path: &str, value: &Value) -> bool {
    match (path, value) {
        (_, Value::Null) => true,
        ("installOptions.replace", Value::Bool(b)) => *b,
        (_, Value::Bool(b)) => !b,
        (_, Value::String(s)) => s.is_empty(),
        (_, Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// Reads `options` (absent: Sveltos's defaults). `field` is the entry's path in the
/// profile, `spec.helmCharts[0]`, for the notes.
pub fn read(options: Option<&Value>, field: &str) -> Result<ChartOptions, String> {
    let mut out = ChartOptions {
        template: TemplateOptions::default(),
        pass_credentials_all: false,
        create_namespace: true,
        fired_events: vec![HookEvent::PreInstall, HookEvent::PostInstall, HookEvent::PreUpgrade, HookEvent::PostUpgrade],
        delete_hooks: true,
        timeout_seconds: None,
        wait: None,
        cleanup_on_fail: vec![],
        force: false,
        upgrade_crds: false,
        patch_hooks: true,
        deletion_propagation: None,
        notes: vec![],
    };
    let mut wait_for_jobs = false;
    let Some(options) = options.filter(|o| !o.is_null()) else { return Ok(out) };
    let top = options.as_object().ok_or("options is not an object")?;
    let mut leaves = Vec::new();
    for (key, value) in top {
        match (key.as_str(), value) {
            ("installOptions" | "upgradeOptions" | "uninstallOptions", Value::Object(nested)) => {
                leaves.extend(nested.iter().map(|(k, v)| (format!("{key}.{k}"), v)));
            }
            _ => leaves.push((key.clone(), value)),
        }
    }
    for (path, value) in leaves {
        let flag = || value.as_bool().ok_or_else(|| format!("options.{path} is not a boolean"));
        match treatment(&path) {
            Some(Treatment::Render) => match path.as_str() {
                "skipCRDs" => out.template.include_crds = !flag()?,
                "disableHooks" => out.template.hooks = !flag()?,
                "skipSchemaValidation" => out.template.skip_schema_validation = flag()?,
                "installOptions.createNamespace" => out.create_namespace = flag()?,
                "passCredentialsAll" => out.pass_credentials_all = flag()?,
                "timeout" => out.timeout_seconds = timeout(value).map_err(|m| format!("options.timeout: {m}"))?,
                "wait" if flag()? => out.wait = Some(false),
                "waitForJobs" => wait_for_jobs = flag()?,
                "atomic" if flag()? => {
                    out.wait = Some(false);
                    out.cleanup_on_fail = vec!["install", "upgrade"];
                    out.notes.push(note(field, &path, Support::NotSupported, NO_ROLLBACK));
                }
                "upgradeOptions.cleanupOnFail" if flag()? && out.cleanup_on_fail.is_empty() => out.cleanup_on_fail = vec!["upgrade"],
                "upgradeOptions.force" => out.force = flag()?,
                "upgradeOptions.upgradeCRDs" => out.upgrade_crds = flag()?,
                "uninstallOptions.deletionPropagation" => {
                    out.deletion_propagation = match value.as_str() {
                        Some("") => None,
                        Some("background") => Some("background"),
                        Some("foreground") => Some("foreground"),
                        Some("orphan") => Some("orphan"),
                        _ => {
                            return Err(format!(
                                "options.uninstallOptions.deletionPropagation is {value}, not orphan, foreground or background"
                            ));
                        }
                    }
                }
                "postRenderStrategy" => {
                    out.patch_hooks = match value.as_str() {
                        Some("" | "combined" | "separate") => true,
                        Some("nohooks") => false,
                        _ => return Err(format!("options.postRenderStrategy is {value}, not combined, separate or nohooks")),
                    }
                }
                "runTests" if flag()? => out.fired_events.push(HookEvent::Test),
                "installOptions.disableHooks" if flag()? => {
                    out.fired_events.retain(|e| !matches!(e, HookEvent::PreInstall | HookEvent::PostInstall))
                }
                "uninstallOptions.disableHooks" => out.delete_hooks = !flag()?,
                "upgradeOptions.disableHooks" if flag()? => {
                    out.fired_events.retain(|e| !matches!(e, HookEvent::PreUpgrade | HookEvent::PostUpgrade))
                }
                _ => {}
            },
            _ if is_default(&path, value) => {}
            Some(Treatment::NotApplicable(detail)) => out.notes.push(note(field, &path, Support::NotApplicable, detail)),
            None => out.notes.push(note(field, &path, Support::NotSupported, "not an option Airlock knows")),
        }
    }
    // Helm waits for Jobs only when it waits at all.
    out.wait = out.wait.map(|_| wait_for_jobs);
    Ok(out)
}

/// A `metav1.Duration` (`"10m0s"`, `"1h30m"`, `"90s"`, `"1.5h"`) in whole seconds,
/// rounded up; empty is unset.
fn timeout(value: &Value) -> Result<Option<u64>, String> {
    let text = value.as_str().ok_or("not a duration string")?;
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || format!("{text:?} is not a duration such as \"10m0s\"");
    let mut nanos = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').ok_or_else(bad)?;
        let number: f64 = rest[..number_end].parse().map_err(|_| bad())?;
        let unit_end = rest[number_end..].find(|c: char| c.is_ascii_digit() || c == '.').map_or(rest.len(), |i| number_end + i);
        let scale = match &rest[number_end..unit_end] {
            "h" => 3.6e12,
            "m" => 6e10,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            _ => return Err(bad()),
        };
        nanos += number * scale;
        rest = &rest[unit_end..];
    }
    let seconds = (nanos / 1e9).ceil() as u64;
    match seconds {
        0 => Err(format!("{text:?} is no time at all")),
        s if s > MAX_TIMEOUT_SECONDS => Err(format!("{text:?} is more than the {MAX_TIMEOUT_SECONDS}s a hook may be waited for")),
        s => Ok(Some(s)),
    }
}

fn note(field: &str, path: &str, support: Support, detail: &str) -> FieldNote {
    FieldNote { field: format!("{field}.options.{path}"), support, detail: detail.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_render_options() {
        let o = read(Some(&json!({"skipCRDs": true, "disableHooks": true, "skipSchemaValidation": true, "passCredentialsAll": true})), "f")
            .expect("reads");
        assert_eq!(o.template, TemplateOptions { include_crds: false, hooks: false, skip_schema_validation: true });
        assert!(o.pass_credentials_all);
        assert!(o.notes.is_empty());
        assert_eq!(read(None, "f").expect("reads").template, TemplateOptions::default());
    }

    #[test]
    fn notes_only_options_set_away_from_their_default() {
        let o = read(
            Some(&json!({"labels": {"a": "b"}, "atomic": false, "timeout": "10m", "installOptions": {"createNamespace": false, "replace": false}, "bogus": 1})),
            "spec.helmCharts[0]",
        )
        .expect("reads");
        assert!(!o.create_namespace);
        let fields: Vec<_> = o.notes.iter().map(|n| (n.field.as_str(), n.support)).collect();
        assert_eq!(
            fields,
            [
                ("spec.helmCharts[0].options.bogus", Support::NotSupported),
                ("spec.helmCharts[0].options.installOptions.replace", Support::NotApplicable),
                ("spec.helmCharts[0].options.labels", Support::NotApplicable),
            ]
        );
    }

    #[test]
    fn hook_options_choose_the_events_fired_and_the_timeout() {
        let o = read(Some(&json!({"runTests": true, "timeout": "1m30s", "installOptions": {"disableHooks": true}})), "f").expect("reads");
        assert_eq!(o.fired_events, [HookEvent::PreUpgrade, HookEvent::PostUpgrade, HookEvent::Test]);
        assert_eq!(o.timeout_seconds, Some(90));
        let o =
            read(Some(&json!({"upgradeOptions": {"disableHooks": true}, "uninstallOptions": {"disableHooks": true}})), "f").expect("reads");
        assert_eq!(o.fired_events, [HookEvent::PreInstall, HookEvent::PostInstall]);
        assert!(!o.delete_hooks);
        assert!(o.notes.is_empty());
        for (text, seconds) in [("10m0s", 600), ("1.5h", 5400), ("500ms", 1), ("", 0)] {
            assert_eq!(timeout(&json!(text)).unwrap().unwrap_or(0), seconds, "{text}");
        }
        for text in ["10", "5d", "0s", "25h", "m"] {
            assert!(timeout(&json!(text)).is_err(), "{text}");
        }
    }

    #[test]
    fn apply_side_options_say_how_the_site_treats_the_release() {
        let o = read(Some(&json!({"waitForJobs": true})), "f").expect("reads");
        assert_eq!(o.wait, None, "waitForJobs without wait waits for nothing, as in Helm");
        let o = read(Some(&json!({"wait": true, "waitForJobs": true, "upgradeOptions": {"cleanupOnFail": true, "force": true}})), "f")
            .expect("reads");
        assert_eq!((o.wait, o.cleanup_on_fail.as_slice(), o.force), (Some(true), &["upgrade"][..], true));
        assert!(o.notes.is_empty());
        let o = read(Some(&json!({"atomic": true, "postRenderStrategy": "nohooks", "upgradeOptions": {"upgradeCRDs": true}})), "f")
            .expect("reads");
        assert_eq!((o.wait, o.cleanup_on_fail.as_slice()), (Some(false), &["install", "upgrade"][..]));
        assert!(o.upgrade_crds && !o.patch_hooks);
        assert_eq!(o.notes.iter().map(|n| n.field.as_str()).collect::<Vec<_>>(), ["f.options.atomic"], "the rollback it cannot do");
        let o = read(Some(&json!({"upgradeOptions": {"recreate": true}})), "f").expect("reads");
        assert_eq!(o.notes[0].support, Support::NotApplicable);
        assert!(read(Some(&json!({"postRenderStrategy": "later"})), "f").is_err());
        let o = read(Some(&json!({"uninstallOptions": {"deletionPropagation": "orphan"}})), "f").expect("reads");
        assert_eq!(o.deletion_propagation, Some("orphan"));
        assert!(read(Some(&json!({"uninstallOptions": {"deletionPropagation": "Orphan"}})), "f").is_err());
    }

    #[test]
    fn rejects_an_option_of_the_wrong_type() {
        assert_eq!(read(Some(&json!({"skipCRDs": "yes"})), "f"), Err("options.skipCRDs is not a boolean".into()));
        assert_eq!(read(Some(&json!([])), "f"), Err("options is not an object".into()));
    }
}
