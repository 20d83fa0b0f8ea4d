use serde_json::json;

use super::*;
use crate::engine::testing;

fn annotations(value: Value) -> Map<String, Value> {
    value.as_object().expect("a map").clone()
}

fn hook(value: Value) -> Result<Option<Hook>, String> {
    read(&annotations(value), true)
}

#[test]
fn reads_events_weight_policies_and_timeout() {
    let read = hook(json!({
        HOOK_ANNOTATION: "pre-install, post-upgrade,pre-install",
        HOOK_WEIGHT_ANNOTATION: "-5",
        HOOK_DELETE_POLICY_ANNOTATION: "hook-succeeded,hook-failed",
        HOOK_TIMEOUT_ANNOTATION: "90",
    }))
    .unwrap()
    .expect("a hook");
    assert_eq!(read.events, [HookEvent::PreInstall, HookEvent::PostUpgrade]);
    assert_eq!(read.weight, -5);
    assert!(!read.delete_before && read.delete_succeeded && read.delete_failed);
    assert_eq!(read.timeout, Duration::from_secs(90));
}

#[test]
fn defaults_as_helm_does() {
    let read = hook(json!({HOOK_ANNOTATION: "test"})).unwrap().expect("a hook");
    assert_eq!((read.weight, read.delete_before, read.delete_succeeded, read.delete_failed), (0, true, false, false));
    assert_eq!(read.timeout, DEFAULT_TIMEOUT);
    assert_eq!(hook(json!({"helm.sh/hook": "pre-install"})).unwrap(), None, "Helm's own annotations make no hook");
}

#[test]
fn refuses_what_the_spec_does_not_allow_naming_the_annotation() {
    let cases = [
        (json!({HOOK_ANNOTATION: "pre-rollback"}), "airlock.dev/hook names \"pre-rollback\""),
        (json!({HOOK_ANNOTATION: ""}), "airlock.dev/hook names \"\""),
        (json!({HOOK_ANNOTATION: "pre-install", HOOK_WEIGHT_ANNOTATION: " 5"}), "airlock.dev/hook-weight is \" 5\", not an integer"),
        (json!({HOOK_ANNOTATION: "pre-install", HOOK_DELETE_POLICY_ANNOTATION: "never"}), "airlock.dev/hook-delete-policy names \"never\""),
        (json!({HOOK_ANNOTATION: "pre-install", HOOK_TIMEOUT_ANNOTATION: "0"}), "airlock.dev/hook-timeout-seconds is \"0\""),
        (json!({HOOK_ANNOTATION: "pre-install", HOOK_TIMEOUT_ANNOTATION: "1m"}), "airlock.dev/hook-timeout-seconds is \"1m\""),
        (json!({HOOK_WEIGHT_ANNOTATION: "1"}), "airlock.dev/hook-weight is set without airlock.dev/hook"),
    ];
    for (value, expected) in cases {
        let error = hook(value.clone()).expect_err(&value.to_string());
        assert!(error.contains(expected), "{value}: {error}");
    }
    let outside = read(&annotations(json!({HOOK_ANNOTATION: "pre-install"})), false).expect_err("no release");
    assert!(outside.contains("no airlock.dev/helm-release label"), "{outside}");
}

#[test]
fn the_release_is_its_namespace_and_name() {
    let labels = annotations(json!({RELEASE_LABEL: "web", RELEASE_NAMESPACE_LABEL: "apps"}));
    assert_eq!(release(&labels).as_deref(), Some("apps/web"));
    assert_eq!(release(&annotations(json!({"app": "web"}))), None);
}

#[test]
fn a_hook_fires_on_the_event_of_the_operation() {
    let hook = |events: Value| read(&annotations(json!({HOOK_ANNOTATION: events})), true).unwrap().unwrap();
    let both = hook(json!("pre-install,post-install,post-upgrade"));
    assert_eq!(both.fires(Operation::Install), Some((HookEvent::PreInstall, Slot::Pre)));
    assert_eq!(both.fires(Operation::Upgrade), Some((HookEvent::PostUpgrade, Slot::Post)));
    assert_eq!(hook(json!("pre-upgrade")).fires(Operation::Install), None);
    assert_eq!(hook(json!("test")).fires(Operation::Upgrade), Some((HookEvent::Test, Slot::Test)));
    let delete = hook(json!("pre-delete,post-delete,test"));
    assert_eq!(delete.fires(Operation::Uninstall), Some((HookEvent::PreDelete, Slot::Pre)));
    assert_eq!(hook(json!("post-delete")).fires(Operation::Uninstall), Some((HookEvent::PostDelete, Slot::Post)));
    assert_eq!(hook(json!("test")).fires(Operation::Uninstall), None, "no tests when uninstalling");
    assert_eq!(delete.fires(Operation::Install), Some((HookEvent::Test, Slot::Test)));
}

fn object(name: &str, release: &str, hash: &str) -> DesiredObject {
    DesiredObject { release: Some(release.into()), hash: hash.into(), ..testing::object("v1", "ConfigMap", Some("a"), name) }
}

fn entry(object: &DesiredObject, hook: bool) -> InventoryEntry {
    testing::entry(object, hook)
}

#[test]
fn a_release_is_installed_upgraded_or_left_alone() {
    let a = object("a", "ns/r", "1");
    let job = DesiredObject { hook: hook(json!({HOOK_ANNOTATION: "pre-install"})).unwrap(), ..object("job", "ns/r", "j") };
    // Nothing of it applied before: an install, even when only its hooks were recorded.
    let ops = operations([&a, &job].into_iter(), &[entry(&job, true)]);
    assert_eq!(ops.get("ns/r"), Some(&Operation::Install));
    // Everything as applied: nothing fires.
    let same = [entry(&a, false), entry(&job, true)];
    assert!(operations([&a, &job].into_iter(), &same).is_empty());
    // An object changed, a hook changed, an object withdrawn: an upgrade.
    let changed = object("a", "ns/r", "2");
    assert_eq!(operations([&changed, &job].into_iter(), &same).get("ns/r"), Some(&Operation::Upgrade));
    let new_job = DesiredObject { hash: "j2".into(), ..job.clone() };
    assert_eq!(operations([&a, &new_job].into_iter(), &same).get("ns/r"), Some(&Operation::Upgrade));
    let b = object("b", "ns/r", "1");
    let with_b = [entry(&a, false), entry(&b, false), entry(&job, true)];
    assert_eq!(operations([&a, &job].into_iter(), &with_b).get("ns/r"), Some(&Operation::Upgrade));
}

#[test]
fn a_release_of_hooks_only_is_uninstalled_once() {
    let a = object("a", "ns/r", "1");
    let pre_delete = DesiredObject { hook: hook(json!({HOOK_ANNOTATION: "pre-delete"})).unwrap(), ..object("backup", "ns/r", "b") };
    let installed = [entry(&a, false)];
    assert_eq!(operations([&pre_delete].into_iter(), &installed).get("ns/r"), Some(&Operation::Uninstall));
    // Once uninstalled, only the hook is recorded: nothing fires again.
    assert!(operations([&pre_delete].into_iter(), &[entry(&pre_delete, true)]).is_empty());
    // Withdrawn whole: nothing to fire.
    assert!(operations(std::iter::empty(), &installed).is_empty());
}

#[test]
fn a_delete_hook_new_or_changed_alone_upgrades_nothing() {
    let a = object("a", "ns/r", "1");
    let pre_delete =
        DesiredObject { hook: hook(json!({HOOK_ANNOTATION: "pre-delete,post-delete"})).unwrap(), ..object("backup", "ns/r", "b") };
    assert!(operations([&a, &pre_delete].into_iter(), &[entry(&a, false)]).is_empty(), "the hook is new");
    let changed = DesiredObject { hash: "b2".into(), ..pre_delete.clone() };
    assert!(operations([&a, &changed].into_iter(), &[entry(&a, false), entry(&pre_delete, true)]).is_empty());
    let install_too = DesiredObject { hook: hook(json!({HOOK_ANNOTATION: "pre-install,pre-delete"})).unwrap(), ..pre_delete.clone() };
    assert_eq!(operations([&a, &install_too].into_iter(), &[entry(&a, false)]).get("ns/r"), Some(&Operation::Upgrade));
}

#[test]
fn create_only_dry_run_and_one_time_objects_change_nothing() {
    let a = object("a", "ns/r", "1");
    let crd = DesiredObject { create_only: true, ..object("crd", "ns/r", "c") };
    let applied = [entry(&a, false)];
    assert!(operations([&a, &crd].into_iter(), &applied).is_empty());
    let once = DesiredObject { sync_mode: SyncMode::OneTime, ..object("a", "ns/r", "2") };
    assert!(operations([&once].into_iter(), &applied).is_empty());
    let dry = DesiredObject { sync_mode: SyncMode::DryRun, ..object("a", "ns/r", "2") };
    assert!(operations([&dry].into_iter(), &applied).is_empty());
    let other = DesiredObject { release: None, ..object("x", "", "9") };
    assert!(operations([&a, &other].into_iter(), &applied).is_empty());
}
