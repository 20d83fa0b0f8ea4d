//! Spec 5.2 and 5.3's optional settings at step 6: a statement that carries them verifies
//! when they are well formed, and is refused, naming the part and the field, when not.

use airlock_bundle::statement::{ActiveWindow, ClusterScopedObject, DriftExclusion, FieldNote, RenderFailure, Support};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::VerifyError;

use super::{check, resigned};

fn refused(fx: &Fixture, envelope: &[u8], needle: &str) {
    match check(fx, envelope) {
        Err(VerifyError::BadField(message)) => assert!(message.contains(needle), "{message:?} lacks {needle:?}"),
        other => panic!("expected BadField naming {needle:?}, got {other:?}"),
    }
}

#[test]
fn accepts_well_formed_settings() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| {
        s.predicate.settings.active_window = Some(ActiveWindow { from: "0 20 * * 5".into(), to: "0 7 * * 1".into() });
        let p = &mut s.predicate.profiles[0];
        p.continue_on_error = true;
        p.max_consecutive_failures = Some(3);
        p.drift_exclusions = vec![DriftExclusion { paths: vec!["/spec/replicas".into()], target: None }];
        p.notes = vec![FieldNote { field: "spec.reloader".into(), support: Support::NotSupported, detail: "none".into() }];
    });
    check(&fx, &env).expect("well-formed settings verify");
}

#[test]
fn rejects_an_active_window_that_is_not_cron() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.settings.active_window = Some(ActiveWindow { from: "0 25 * * *".into(), to: "@daily".into() }));
    refused(&fx, &env, "activeWindow: cron expression \"0 25 * * *\": hour");
}

#[test]
fn rejects_zero_consecutive_failures() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.profiles[0].max_consecutive_failures = Some(0));
    refused(&fx, &env, "\"ClusterProfile.web\": maxConsecutiveFailures is 0");
}

#[test]
fn rejects_drift_exclusions_that_are_not_json_pointers() {
    let fx = Fixture::new(1);
    let exclusion = |paths: Vec<String>| DriftExclusion { paths, target: None };
    let env = resigned(&fx, |s| s.predicate.profiles[0].drift_exclusions = vec![exclusion(vec!["spec.replicas".into()])]);
    refused(&fx, &env, "driftExclusions[0] path \"spec.replicas\" is not a JSON pointer");
    let env = resigned(&fx, |s| s.predicate.profiles[0].drift_exclusions = vec![exclusion(vec![])]);
    refused(&fx, &env, "driftExclusions[0] has 0 paths");
}

#[test]
fn rejects_a_note_without_a_field() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| {
        s.predicate.profiles[0].notes = vec![FieldNote { field: String::new(), support: Support::NotApplicable, detail: "x".into() }]
    });
    refused(&fx, &env, "a note names no field");
}

#[test]
fn rejects_content_kept_from_this_or_a_later_version() {
    let fx = Fixture::new(1);
    let version = super::good(&fx).version();
    for kept in [0, version, version + 1] {
        let env =
            resigned(&fx, |s| s.predicate.profiles[0].failure = Some(RenderFailure { message: "boom".into(), kept_from: Some(kept) }));
        refused(&fx, &env, &format!("failure.keptFrom {kept} is not an earlier version than {version}"));
    }
}

#[test]
fn accepts_a_sorted_cluster_scoped_list_and_rejects_a_bad_or_unsorted_one() {
    let fx = Fixture::new(1);
    let entry = |group: &str, kind: &str, name: &str| ClusterScopedObject { group: group.into(), kind: kind.into(), name: name.into() };
    let good = vec![entry("", "Namespace", "extra"), entry("rbac.authorization.k8s.io", "ClusterRole", "system:view-widgets")];
    let env = resigned(&fx, |s| s.predicate.settings.cluster_scoped = good.clone());
    check(&fx, &env).expect("a sorted, well-formed allow-list verifies");
    let env = resigned(&fx, |s| s.predicate.settings.cluster_scoped = good.iter().rev().cloned().collect());
    refused(&fx, &env, "clusterScoped entry Namespace/extra is out of order or repeated");
    let env = resigned(&fx, |s| s.predicate.settings.cluster_scoped = vec![good[0].clone(), good[0].clone()]);
    refused(&fx, &env, "out of order or repeated");
    for bad in
        [entry("Bad_Group", "ClusterRole", "x"), entry("", "namespace", "x"), entry("", "Namespace", "a/b"), entry("", "Namespace", "")]
    {
        let env = resigned(&fx, |s| s.predicate.settings.cluster_scoped = vec![bad.clone()]);
        refused(&fx, &env, &format!("clusterScoped entry {bad} is not"));
    }
}

#[test]
fn rejects_a_final_bundle_with_parts_or_without_the_mass_prune_confirmation() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| {
        s.predicate.decommission = true;
        s.predicate.settings.allow_mass_prune = true;
    });
    refused(&fx, &env, "decommission: a final bundle holds no parts and no files, this one 2 and 3");
    let env = resigned(&fx, |s| {
        s.predicate.decommission = true;
        s.predicate.profiles.clear();
        s.predicate.files.clear();
    });
    refused(&fx, &env, "decommission: a final bundle must also carry allowMassPrune true");
}

fn classifier(name: &str) -> airlock_bundle::statement::Evaluation {
    use airlock_bundle::statement::{Evaluation, EvaluationKind, Selection, Selector};
    let selector = Selector { objects: Selection::every("", "v1", "Service"), script: None, cel: vec![] };
    Evaluation { kind: EvaluationKind::Classifier, name: name.into(), selectors: vec![selector], aggregate: None, collect_resources: false }
}

#[test]
fn evaluations_travel_signed_and_are_held_to_step_6() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.settings.evaluations = vec![classifier("a"), classifier("b")]);
    let verified = check(&fx, &env).expect("well-formed evaluations verify");
    let names: Vec<String> = verified.predicate().settings.evaluations.iter().map(|e| e.name.clone()).collect();
    assert_eq!(names, ["a", "b"]);
    let env = resigned(&fx, |s| s.predicate.settings.evaluations = vec![classifier("b"), classifier("a")]);
    refused(&fx, &env, "evaluations: Classifier \"a\" is out of order or repeated");
}
