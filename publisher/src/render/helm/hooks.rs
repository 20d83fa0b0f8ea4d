//! Helm hooks: the `helm.sh/hook*` annotations of a rendered object, and the order Helm
//! runs the hooks of one event in.
//!
//! Semantics are helm v3.17.2's and v4.1.4's (`pkg/release` hook annotations,
//! `pkg/releaseutil` manifest sorting, `pkg/action/hooks.go` `execHook`):
//! - `helm.sh/hook` is a comma-separated list of events, trimmed and lower-cased;
//!   `test-success` is the old name of `test`. Helm itself leaves out an object naming an
//!   unknown event ("skipping unknown hook"), so none reaches this module from helm's output.
//! - `helm.sh/hook-weight` is an integer, 0 when absent or not one (`" 5"` included: helm
//!   parses it with Go's `strconv.Atoi`).
//! - `helm.sh/hook-delete-policy` is a comma-separated list; with none, Helm deletes the
//!   previous copy before creating the hook (`before-hook-creation`).
//! - The hooks of an event run one after another: sorted by weight, then by name, stably
//!   over Helm's kind order (which `helm template` already prints them in). So hooks of one
//!   weight and name run in kind install order, and a Job `a` runs before a ServiceAccount
//!   `b` of the same weight. (A later change on helm's main branch sorts by kind before
//!   name; neither pinned release does.)
//!
//! Running them (waiting for Jobs, deleting by policy) is the puller's business: a hook
//! tells it so with the Airlock annotations of spec 2.5.3 ([`HookSpec::site_annotations`]).

use std::collections::BTreeMap;

pub use airlock_bundle::vocabulary::{DeletePolicy, HookEvent};
use airlock_bundle::vocabulary::{HOOK_ANNOTATION, HOOK_DELETE_POLICY_ANNOTATION, HOOK_TIMEOUT_ANNOTATION, HOOK_WEIGHT_ANNOTATION};
use serde_json::Value;

pub const HELM_HOOK_ANNOTATION: &str = "helm.sh/hook";
pub const HELM_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
pub const HELM_DELETE_POLICY_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// Helm's older name of [`HookEvent::Test`], which charts still write.
const TEST_SUCCESS: &str = "test-success";

/// The event `text` (trimmed, lower-cased) names, Helm's aliases included.
fn parse_event(text: &str) -> Option<HookEvent> {
    if text == TEST_SUCCESS { Some(HookEvent::Test) } else { text.parse().ok() }
}

/// A hook's annotations, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSpec {
    pub events: Vec<HookEvent>,
    pub weight: i32,
    /// As written; empty means Helm's default, see [`HookSpec::effective_delete_policies`].
    pub delete_policies: Vec<DeletePolicy>,
}

impl HookSpec {
    /// The hook annotations of `object`, or `None` for an object that is not a hook.
    pub fn of(object: &Value) -> Option<HookSpec> {
        let annotations = object.pointer("/metadata/annotations")?;
        let hook = annotations.get(HELM_HOOK_ANNOTATION)?.as_str()?;
        let events = list(hook).filter_map(|e| parse_event(&e)).fold(Vec::new(), |mut all, e| {
            if !all.contains(&e) {
                all.push(e);
            }
            all
        });
        let weight = annotations.get(HELM_WEIGHT_ANNOTATION).and_then(Value::as_str).and_then(|w| w.parse().ok()).unwrap_or(0);
        let delete_policies = annotations
            .get(HELM_DELETE_POLICY_ANNOTATION)
            .and_then(Value::as_str)
            .map(|p| list(p).filter_map(|p| p.parse::<DeletePolicy>().ok()).collect())
            .unwrap_or_default();
        Some(HookSpec { events, weight, delete_policies })
    }

    /// The annotations that make the site fire this hook on those of its events in `fired`,
    /// waiting at most `timeout_seconds` for it (the site's default without): None when it
    /// fires on none of them, and is not shipped.
    pub fn site_annotations(&self, fired: &[HookEvent], timeout_seconds: Option<u64>) -> Option<BTreeMap<String, String>> {
        let events: Vec<&str> = self.events.iter().filter(|e| fired.contains(e)).map(|e| e.as_str()).collect();
        if events.is_empty() {
            return None;
        }
        let policies: Vec<&str> = self.effective_delete_policies().into_iter().map(DeletePolicy::as_str).collect();
        let mut out = BTreeMap::from([
            (HOOK_ANNOTATION.to_string(), events.join(",")),
            (HOOK_WEIGHT_ANNOTATION.to_string(), self.weight.to_string()),
            (HOOK_DELETE_POLICY_ANNOTATION.to_string(), policies.join(",")),
        ]);
        if let Some(seconds) = timeout_seconds {
            out.insert(HOOK_TIMEOUT_ANNOTATION.to_string(), seconds.to_string());
        }
        Some(out)
    }

    /// The policies Helm acts on: `before-hook-creation` when none is written.
    pub fn effective_delete_policies(&self) -> Vec<DeletePolicy> {
        if self.delete_policies.is_empty() { vec![DeletePolicy::BeforeHookCreation] } else { self.delete_policies.clone() }
    }
}

fn list(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',').map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty())
}

/// Orders the hooks of one event, given in Helm's kind order, as Helm runs them.
pub(super) fn run_order<T>(hooks: &mut [T], key: impl Fn(&T) -> (i32, &str)) {
    hooks.sort_by(|a, b| key(a).cmp(&key(b)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": annotations}})
    }

    #[test]
    fn reads_events_weight_and_policies() {
        let spec = HookSpec::of(&object(json!({
            "helm.sh/hook": " Pre-Install, post-upgrade,bogus,pre-install",
            "helm.sh/hook-weight": "-5",
            "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded,unknown",
        })))
        .expect("a hook");
        assert_eq!(spec.events, [HookEvent::PreInstall, HookEvent::PostUpgrade]);
        assert_eq!(spec.weight, -5);
        assert_eq!(spec.delete_policies, [DeletePolicy::BeforeHookCreation, DeletePolicy::HookSucceeded]);
    }

    #[test]
    fn defaults_as_helm_does() {
        let spec = HookSpec::of(&object(json!({"helm.sh/hook": "test-success", "helm.sh/hook-weight": "heavy"}))).expect("a hook");
        assert_eq!(spec.events, [HookEvent::Test]);
        assert_eq!(spec.weight, 0);
        let spaced = HookSpec::of(&object(json!({"helm.sh/hook": "pre-install", "helm.sh/hook-weight": " 5"}))).expect("a hook");
        assert_eq!(spaced.weight, 0);
        assert_eq!(spec.effective_delete_policies(), [DeletePolicy::BeforeHookCreation]);
        assert_eq!(HookSpec::of(&object(json!({"other": "x"}))), None);
    }

    #[test]
    fn tells_the_site_the_events_it_fires_on() {
        let spec = HookSpec::of(&object(json!({"helm.sh/hook": "pre-install,pre-delete,test", "helm.sh/hook-weight": "-2"}))).unwrap();
        let fired = [HookEvent::PreInstall, HookEvent::PostInstall, HookEvent::Test];
        let annotations = spec.site_annotations(&fired, Some(90)).expect("fires");
        let expected = [
            ("airlock.dev/hook", "pre-install,test"),
            ("airlock.dev/hook-delete-policy", "before-hook-creation"),
            ("airlock.dev/hook-timeout-seconds", "90"),
            ("airlock.dev/hook-weight", "-2"),
        ];
        assert_eq!(annotations, expected.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        assert_eq!(spec.site_annotations(&[HookEvent::PostUpgrade], None), None);
    }

    #[test]
    fn runs_by_weight_then_name_keeping_kind_order() {
        // (kind, name, weight), in kind order as helm template prints them.
        let mut hooks = vec![("ServiceAccount", "b", 0), ("ConfigMap", "z", -1), ("Role", "a-x", 0), ("Job", "a", 0), ("Job", "a-x", 0)];
        run_order(&mut hooks, |h| (h.2, h.1));
        assert_eq!(hooks, [("ConfigMap", "z", -1), ("Job", "a", 0), ("Role", "a-x", 0), ("Job", "a-x", 0), ("ServiceAccount", "b", 0)]);
    }
}
