use airlock_bundle::Limits;
use airlock_bundle::vocabulary::{BUNDLE_DIGEST_ANNOTATION, CLUSTER_LABEL, PROFILE_LABEL, VERSION_ANNOTATION};
use airlock_bundle::{PartSettings, StopMatchingBehavior, SyncMode};
use serde_json::json;

use super::*;
use crate::engine::ObjectId;
use crate::engine::testing::{self, verified};

const WEB: &str = "ClusterProfile.web";

fn settings() -> Settings {
    testing::settings("fleet/edge-1")
}

fn file(path: &str, yaml: &str) -> (String, String) {
    (path.to_string(), yaml.to_string())
}

fn parse(version: u64, files: &[(String, String)]) -> Result<Vec<DesiredObject>, EngineError> {
    desired(&verified(version, files, &|_| PartSettings::default()), &settings())
}

fn manifest_error(files: &[(String, String)]) -> (String, String) {
    match parse(1, files) {
        Err(EngineError::Manifest { source_path, message }) => (source_path, message),
        other => panic!("expected a manifest error, got {other:?}"),
    }
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: web\ndata:\n  k: v\n";

#[test]
fn multi_document_files_skip_empty_documents() {
    let yaml = format!("---\n{CONFIG_MAP}---\n---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n");
    let objects = parse(1, &[file("ClusterProfile.web/all.yaml", &yaml)]).unwrap();
    let ids: Vec<(&str, &str)> = objects.iter().map(|o| (o.id.kind.as_str(), o.id.name.as_str())).collect();
    assert_eq!(ids, [("ConfigMap", "a"), ("Namespace", "web")]);
    assert_eq!(objects[0].source, "ClusterProfile.web/all.yaml document 1");
    assert_eq!(objects[1].source, "ClusterProfile.web/all.yaml document 2");
    assert_eq!(
        objects[0].id,
        ObjectId { group: "".into(), version: "v1".into(), kind: "ConfigMap".into(), namespace: Some("web".into()), name: "a".into() }
    );
}

#[test]
fn a_listing_names_what_desired_gives_and_refuses_what_it_refuses() {
    let yaml = format!("{CONFIG_MAP}---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n");
    let files = [file("ClusterProfile.web/all.yaml", &yaml), file("ClusterProfile.db/cm.yaml", &CONFIG_MAP.replace("name: a", "name: b"))];
    let bundle = verified(1, &files, &|_| PartSettings::default());
    let want: Vec<(ObjectId, String)> = desired(&bundle, &settings()).unwrap().into_iter().map(|o| (o.id, o.source)).collect();
    assert_eq!(want.len(), 3);
    assert_eq!(listed(&bundle, &settings()).unwrap(), want);
    let bad = [file("ClusterProfile.web/x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: [x]\n")];
    let bundle = verified(1, &bad, &|_| PartSettings::default());
    assert_eq!(format!("{:?}", listed(&bundle, &settings()).unwrap_err()), format!("{:?}", desired(&bundle, &settings()).unwrap_err()));
}

#[test]
fn rejects_an_alias_bomb() {
    let bomb = "apiVersion: v1
kind: ConfigMap
metadata:
  name: bomb
data:
  a: &a [x, x, x, x, x, x, x, x, x]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]
";
    let (path, message) = manifest_error(&[file("ClusterProfile.web/bomb.yaml", bomb)]);
    assert_eq!(path, "ClusterProfile.web/bomb.yaml");
    assert!(message.contains("line 6") && message.contains("budget"), "{message}");
}

#[test]
fn rejects_a_single_alias() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: a\nx: *m\n";
    let (_, message) = manifest_error(&[file("ClusterProfile.web/a.yaml", yaml)]);
    assert!(message.contains("budget"), "{message}");
}

#[test]
fn rejects_a_depth_bomb_and_a_document_storm() {
    let deep = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {}1{}\n", "[".repeat(70), "]".repeat(70));
    let (_, message) = manifest_error(&[file("ClusterProfile.web/deep.yaml", &deep)]);
    assert!(message.contains("Depth"), "{message}");
    let storm = format!("---\n{CONFIG_MAP}").repeat(Limits::SPEC.yaml_documents + 1);
    let (_, message) = manifest_error(&[file("ClusterProfile.web/storm.yaml", &storm)]);
    assert!(message.contains("Documents"), "{message}");
}

#[test]
fn accepts_the_most_documents_a_file_may_hold() {
    let many: String =
        (0..Limits::SPEC.yaml_documents).map(|i| CONFIG_MAP.replace("name: a", &format!("name: a{i}"))).collect::<Vec<_>>().join("---\n");
    assert_eq!(parse(1, &[file("ClusterProfile.web/many.yaml", &many)]).unwrap().len(), Limits::SPEC.yaml_documents);
}

#[test]
fn rejects_a_document_without_kind_naming_file_and_document() {
    let yaml = format!("{CONFIG_MAP}---\napiVersion: v1\nmetadata:\n  name: b\n");
    let (path, message) = manifest_error(&[file("ClusterProfile.web/two.yaml", &yaml)]);
    assert_eq!(path, "ClusterProfile.web/two.yaml");
    assert_eq!(message, "document 2 (line 9): no kind");
}

#[test]
fn rejects_documents_that_are_not_objects() {
    let cases = [
        ("- a\n- b\n", "not a mapping"),
        ("apiVersion: v1\nkind: ConfigMap\n", "no metadata"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n", "no metadata.name"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ''\n", "metadata.name is not a non-empty string"),
        ("apiVersion: a/b/c\nkind: ConfigMap\nmetadata:\n  name: a\n", "is not VERSION or GROUP/VERSION"),
        ("apiVersion: v1\nkind: 5\nmetadata:\n  name: a\n", "kind is not a non-empty string"),
        ("apiVersion: v1\nkind: List\nmetadata:\n  name: a\nitems: []\n", "a v1 List, which no API serves"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: [x]\n", "metadata.labels is not a mapping"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    n: 1\n", "metadata.annotations.n is not a string"),
    ];
    for (yaml, expected) in cases {
        let (_, message) = manifest_error(&[file("ClusterProfile.web/x.yaml", yaml)]);
        assert!(message.contains(expected), "{yaml:?}: {message}");
    }
}

#[test]
fn rejects_bad_yaml_duplicate_keys_and_non_utf8() {
    let (_, message) = manifest_error(&[file("ClusterProfile.web/x.yaml", "apiVersion: v1\nkind: [ConfigMap\n")]);
    assert!(message.starts_with("line "), "{message}");
    let (_, message) = manifest_error(&[file("ClusterProfile.web/x.yaml", "apiVersion: v1\napiVersion: v2\n")]);
    assert!(message.contains("duplicate"), "{message}");
    let Err(EngineError::Manifest { message, .. }) = parse_file("p/x.yaml", b"kind: \xff\n") else { panic!("accepted") };
    assert!(message.contains("UTF-8"), "{message}");
}

#[test]
fn yaml_1_2_scalars_and_octal_file_modes() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  answer: yes\nmode: 0644\nreplicas: 3\n";
    let objects = parse(1, &[file("ClusterProfile.web/x.yaml", yaml)]).unwrap();
    assert_eq!(objects[0].manifest.value()["data"]["answer"], json!("yes"));
    assert_eq!(objects[0].manifest.value()["mode"], json!(420));
    assert_eq!(objects[0].manifest.value()["replicas"], json!(3));
}

#[test]
fn labels_and_annotations_tie_objects_to_cluster_profile_and_version() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    app: web\n  annotations: null\n";
    let bundle = verified(7, &[file("ClusterProfile.web/x.yaml", yaml)], &|_| PartSettings::default());
    let objects = desired(&bundle, &settings()).unwrap();
    let manifest = objects[0].manifest.value();
    let metadata = &manifest["metadata"];
    assert_eq!(metadata["labels"], json!({"app": "web", CLUSTER_LABEL: "fleet.edge-1", PROFILE_LABEL: WEB}));
    assert_eq!(metadata["annotations"], json!({VERSION_ANNOTATION: "7", BUNDLE_DIGEST_ANNOTATION: bundle.bundle().digest().to_string()}));
    assert_eq!(objects[0].profile, WEB);
}

#[test]
fn the_hash_ignores_the_version_but_not_the_content() {
    let one = parse(1, &[file("ClusterProfile.web/x.yaml", CONFIG_MAP)]).unwrap();
    let other_file = file("ClusterProfile.web/y.yaml", &CONFIG_MAP.replace("name: a", "name: b"));
    let two = parse(2, &[file("ClusterProfile.web/x.yaml", CONFIG_MAP), other_file]).unwrap();
    assert_ne!(one[0].manifest, two[0].manifest, "version and digest annotations differ");
    assert_eq!(one[0].hash, two[0].hash);
    let changed = parse(2, &[file("ClusterProfile.web/x.yaml", &CONFIG_MAP.replace("k: v", "k: w"))]).unwrap();
    assert_ne!(one[0].hash, changed[0].hash);
}

/// The hash is kept in the state as `appliedHash`: it must stay the SHA-256 of the
/// object's compact JSON without the volatile annotations, or an upgraded puller would
/// re-apply every object once.
#[test]
fn the_hash_is_that_of_the_json_without_the_volatile_annotations() {
    let with_own =
        CONFIG_MAP.replace("  namespace: web\n", "  namespace: web\n  annotations:\n    airlock.dev/version: \"9\"\n    keep: x\n");
    for yaml in [CONFIG_MAP.to_string(), with_own] {
        let objects = parse(3, &[file("ClusterProfile.web/x.yaml", &yaml)]).unwrap();
        let mut stable = objects[0].manifest.value();
        let annotations = stable["metadata"]["annotations"].as_object_mut().unwrap();
        for key in VOLATILE_ANNOTATIONS {
            assert!(annotations.remove(key).is_some(), "{key} is stamped");
        }
        assert_eq!(objects[0].hash, Digest::of(&serde_json::to_vec(&stable).unwrap()).hex(), "{yaml}");
    }
}

/// Files are parsed in parallel; the error named is still the first in file order.
#[test]
fn names_the_first_bad_file_in_file_order() {
    let mut files: Vec<_> = (0..64)
        .map(|i| file(&format!("ClusterProfile.web/f{i:02}.yaml"), &CONFIG_MAP.replace("name: a", &format!("name: a{i}"))))
        .collect();
    for i in [17, 40, 63] {
        files[i].1 = "kind: ConfigMap\n".into();
    }
    for _ in 0..8 {
        assert_eq!(manifest_error(&files).0, "ClusterProfile.web/f17.yaml");
    }
}

#[test]
fn settings_and_waves_come_from_the_profile() {
    let files = [file("ClusterProfile.a/x.yaml", CONFIG_MAP), file("ClusterProfile.b/y.yaml", &CONFIG_MAP.replace("name: a", "name: b"))];
    let part = |name: &str| PartSettings {
        depends_on: if name == "ClusterProfile.b" { vec!["ClusterProfile.a".into()] } else { vec![] },
        sync_mode: SyncMode::OneTime,
        tier: 7,
        stop_matching_behavior: StopMatchingBehavior::LeavePolicies,
        force_conflicts: true,
        ..PartSettings::default()
    };
    let objects = desired(&verified(1, &files, &part), &settings()).unwrap();
    assert_eq!(objects.iter().map(|o| o.wave).collect::<Vec<_>>(), [0, 1]);
    let b = &objects[1];
    assert_eq!(
        (b.sync_mode, b.tier, b.stop_matching_behavior, b.force_conflicts),
        (SyncMode::OneTime, 7, StopMatchingBehavior::LeavePolicies, true)
    );
}

#[test]
fn a_service_without_protocol_gets_tcp() {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: 80\n";
    let objects = parse(1, &[file("ClusterProfile.web/s.yaml", yaml)]).unwrap();
    assert_eq!(objects[0].manifest.value()["spec"]["ports"], json!([{"port": 80, "protocol": "TCP"}]));
}

#[test]
fn a_crd_is_applied_without_its_status() {
    let yaml = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\nspec:\n  group: x.io\nstatus:\n  acceptedNames: {kind: '', plural: ''}\n  conditions: []\n";
    let objects = parse(1, &[file("ClusterProfile.web/crd.yaml", yaml)]).unwrap();
    let value = objects[0].manifest.value();
    assert!(value.get("status").is_none(), "{value}");
    assert_eq!(value["spec"]["group"], "x.io");
}

#[test]
fn the_lower_tier_wins_a_duplicate_and_equal_tiers_are_rejected() {
    let files = [file("ClusterProfile.a/x.yaml", CONFIG_MAP), file("ClusterProfile.b/x.yaml", &CONFIG_MAP.replace("k: v", "k: b"))];
    let tiered = |name: &str| PartSettings { tier: if name == "ClusterProfile.b" { 50 } else { 100 }, ..PartSettings::default() };
    let objects = desired(&verified(1, &files, &tiered), &settings()).unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!((objects[0].profile.as_str(), &objects[0].manifest.value()["data"]["k"]), ("ClusterProfile.b", &json!("b")));
    let (path, message) = manifest_error(&files);
    assert_eq!(path, "ClusterProfile.b/x.yaml document 1");
    assert!(message.contains("also defined in ClusterProfile.a/x.yaml document 1"), "{message}");
}

#[test]
fn a_document_without_a_namespace_is_the_same_object_as_one_in_default() {
    let bare = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n";
    let in_default = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\ndata:\n  k: d\n";
    let (path, message) = manifest_error(&[file("ClusterProfile.a/x.yaml", bare), file("ClusterProfile.b/x.yaml", in_default)]);
    assert_eq!(path, "ClusterProfile.b/x.yaml document 1");
    assert!(message.contains("also defined in ClusterProfile.a/x.yaml document 1 (same tier 100)"), "{message}");
}

#[test]
fn label_values_stay_valid_for_long_ids() {
    assert_eq!(label_value("fleet.edge-1"), "fleet.edge-1");
    assert_eq!(cluster_label("fleet/edge-1"), "fleet.edge-1");
    let long = format!("fleet.{}", "edge-".repeat(50) + "x");
    let value = label_value(&long);
    assert!(value.len() <= MAX_LABEL_VALUE && value.starts_with("fleet.edge-edge"), "{value}");
    assert_ne!(value, label_value(&format!("{long}y")), "distinct ids stay distinct");
    let odd = label_value("-Profile.ns.name with space-");
    assert!(odd.bytes().next().unwrap().is_ascii_alphanumeric() && odd.bytes().last().unwrap().is_ascii_alphanumeric(), "{odd}");
    assert!(!odd.contains(' '), "{odd}");
}

#[test]
fn create_only_is_read_from_its_annotation() {
    let marked = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n  annotations:\n    airlock.dev/create-only: \"true\"\n";
    let objects = parse(1, &[file("ClusterProfile.web/ns.yaml", marked), file("ClusterProfile.web/cm.yaml", CONFIG_MAP)]).unwrap();
    assert_eq!(
        objects.iter().map(|o| (o.id.kind.as_str(), o.create_only)).collect::<Vec<_>>(),
        [("ConfigMap", false), ("Namespace", true)]
    );
}

#[test]
fn adopt_is_read_from_its_annotation() {
    let marked = CONFIG_MAP.replace("  namespace: web\n", "  namespace: web\n  annotations:\n    airlock.dev/adopt: \"true\"\n");
    let files = [file("ClusterProfile.web/a.yaml", &marked), file("ClusterProfile.web/b.yaml", &CONFIG_MAP.replace("name: a", "name: b"))];
    let objects = parse(1, &files).unwrap();
    assert_eq!(objects.iter().map(|o| (o.id.name.as_str(), o.adopt)).collect::<Vec<_>>(), [("a", true), ("b", false)]);
}

#[test]
fn force_recreate_is_read_from_either_annotation() {
    let annotated =
        |annotation: &str| CONFIG_MAP.replace("  namespace: web\n", &format!("  namespace: web\n  annotations:\n    {annotation}\n"));
    let files = [
        file("ClusterProfile.web/a.yaml", &annotated("airlock.dev/force-recreate: \"true\"")),
        file("ClusterProfile.web/b.yaml", &annotated("projectsveltos.io/forceRecreate: \"\"").replace("name: a", "name: b")),
        file("ClusterProfile.web/c.yaml", &CONFIG_MAP.replace("name: a", "name: c")),
    ];
    let objects = parse(1, &files).unwrap();
    assert_eq!(
        objects.iter().map(|o| (o.id.name.as_str(), o.force_recreate)).collect::<Vec<_>>(),
        [("a", true), ("b", true), ("c", false)]
    );
}

#[test]
fn drift_detection_ignore_is_read_from_sveltos_annotation_whatever_its_value() {
    let annotated =
        |annotation: &str| CONFIG_MAP.replace("  namespace: web\n", &format!("  namespace: web\n  annotations:\n    {annotation}\n"));
    let files = [
        file("ClusterProfile.web/a.yaml", &annotated("projectsveltos.io/driftDetectionIgnore: \"\"")),
        file("ClusterProfile.web/b.yaml", &annotated("projectsveltos.io/driftDetectionIgnore: ok").replace("name: a", "name: b")),
        file("ClusterProfile.web/c.yaml", &CONFIG_MAP.replace("name: a", "name: c")),
    ];
    let objects = parse(1, &files).unwrap();
    assert_eq!(objects.iter().map(|o| (o.id.name.as_str(), o.drift_ignored)).collect::<Vec<_>>(), [("a", true), ("b", true), ("c", false)]);
    let kept = objects[0].manifest.value();
    assert_eq!(kept["metadata"]["annotations"]["projectsveltos.io/driftDetectionIgnore"], "", "applied as written");
}

#[test]
fn a_release_and_its_hooks_are_read_from_their_labels_and_annotations() {
    let labels = "  labels:\n    airlock.dev/helm-release: web\n    airlock.dev/helm-release-namespace: apps\n";
    let object = CONFIG_MAP.replace("  namespace: web\n", &format!("  namespace: web\n{labels}"));
    let hook =
        object.replace("name: a", "name: h").replace(labels, &format!("{labels}  annotations:\n    airlock.dev/hook: post-install\n"));
    let objects = parse(1, &[file("ClusterProfile.web/a.yaml", &object), file("ClusterProfile.web/h.yaml", &hook)]).unwrap();
    let read: Vec<_> =
        objects.iter().map(|o| (o.id.name.as_str(), o.release.as_deref(), o.hook.as_ref().map(|h| h.events.clone()))).collect();
    assert_eq!(
        read,
        [("a", Some("apps/web"), None), ("h", Some("apps/web"), Some(vec![airlock_bundle::vocabulary::HookEvent::PostInstall]))]
    );
}

#[test]
fn rejects_a_bad_hook_naming_file_document_and_annotation() {
    let labels = "  labels:\n    airlock.dev/helm-release: web\n";
    let cases = [
        (labels, "airlock.dev/hook: pre-rollback", "annotation airlock.dev/hook names \"pre-rollback\""),
        (labels, "airlock.dev/hook: pre-install\n    airlock.dev/hook-weight: heavy", "annotation airlock.dev/hook-weight is \"heavy\""),
        ("", "airlock.dev/hook: pre-install", "no airlock.dev/helm-release label"),
        (labels, "airlock.dev/hook: test\n    airlock.dev/create-only: \"true\"", "a hook (airlock.dev/hook) cannot be create-only"),
    ];
    for (labels, annotations, expected) in cases {
        let yaml = CONFIG_MAP.replace("  namespace: web\n", &format!("  namespace: web\n{labels}  annotations:\n    {annotations}\n"));
        let (path, message) = manifest_error(&[file("ClusterProfile.web/h.yaml", &yaml)]);
        assert_eq!(path, "ClusterProfile.web/h.yaml");
        assert!(message.starts_with("document 1 (line 1): ") && message.contains(expected), "{message}");
    }
}

#[test]
fn rejects_an_airlock_flag_annotation_other_than_true() {
    for key in ["airlock.dev/create-only", "airlock.dev/force-recreate", "airlock.dev/adopt"] {
        for value in ["\"false\"", "\"True\"", "\"yes\"", "\"\""] {
            let yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n  annotations:\n    {key}: {value}\n");
            let (path, message) = manifest_error(&[file("ClusterProfile.web/ns.yaml", &yaml)]);
            assert_eq!(path, "ClusterProfile.web/ns.yaml");
            assert!(
                message.contains(&format!("annotation {key} is")) && message.contains("only value it may have is \"true\""),
                "{message}"
            );
        }
    }
}

#[test]
fn rejects_a_drift_exclusion_it_cannot_use_before_any_object() {
    use airlock_bundle::statement::{DriftExclusion, Target};
    let bad = |name: &str| PartSettings {
        drift_exclusions: if name == "ClusterProfile.db" {
            vec![DriftExclusion { paths: vec!["/data".into()], target: Some(Target { name: Some("a[".into()), ..Target::default() }) }]
        } else {
            vec![]
        },
        ..PartSettings::default()
    };
    let files =
        [file("ClusterProfile.web/cm.yaml", CONFIG_MAP), file("ClusterProfile.db/cm.yaml", &CONFIG_MAP.replace("name: a", "name: b"))];
    let bundle = verified(1, &files, &bad);
    for refused in [desired(&bundle, &settings()).map(drop), listed(&bundle, &settings()).map(drop)] {
        let Err(EngineError::Setting { part, field, message }) = refused else { panic!("expected a setting error: {refused:?}") };
        assert_eq!((part.as_str(), field.as_str()), ("ClusterProfile.db", "driftExclusions[0].target.name"));
        assert!(message.contains("not a regular expression"), "{message}");
    }
}

#[test]
fn part_rules_come_from_the_profile() {
    let files = [file("ClusterProfile.a/x.yaml", CONFIG_MAP), file("ClusterProfile.b/y.yaml", &CONFIG_MAP.replace("name: a", "name: b"))];
    let part = |name: &str| PartSettings {
        depends_on: if name == "ClusterProfile.b" { vec!["ClusterProfile.a".into()] } else { vec![] },
        continue_on_error: name == "ClusterProfile.a",
        ..PartSettings::default()
    };
    let objects = desired(&verified(1, &files, &part), &settings()).unwrap();
    let (a, b) = (&objects[0].rules, &objects[1].rules);
    assert!(a.continue_on_error && !b.continue_on_error);
    assert_eq!((a.requires.len(), b.requires.iter().collect::<Vec<_>>()), (0, vec![&"ClusterProfile.a".to_string()]));
}

/// `signed` verified as a puller does, its encrypted files decrypted with `identities`.
fn opened(signed: &airlock_bundle::SignedBundle, identities: &[airlock_bundle::age::Identity]) -> airlock_bundle::VerifiedBundle {
    let fixture = airlock_bundle::testkit::Fixture::new(1);
    let floor = Default::default();
    let envelope = airlock_bundle::verify::verify_envelope(&signed.envelope, None, &fixture.expect(&floor), &Limits::SPEC).unwrap();
    let parts = signed
        .bundle
        .parts()
        .map(|(n, p)| envelope.verify_part(n, airlock_bundle::Transport::Tar(&p.tar()), &Limits::SPEC).unwrap())
        .collect();
    envelope.finish(parts, &Limits::SPEC).unwrap().decrypt(identities, &Limits::SPEC).unwrap()
}

#[test]
fn a_puller_that_decrypts_refuses_a_secret_in_clear_unless_the_bundle_allows_it() {
    use airlock_bundle::age::Identity;
    use airlock_bundle::testkit::Fixture;
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: web\nstringData:\n  password: x\n";
    let files = vec![
        ("ClusterProfile.web/Secret.web.db.yaml".to_string(), secret.as_bytes().to_vec()),
        ("ClusterProfile.web/cm.yaml".to_string(), CONFIG_MAP.as_bytes().to_vec()),
    ];
    let fixture = Fixture::new(1);
    let clear = opened(&fixture.signed(1, files.clone()), &[]);
    assert!(desired(&clear, &settings()).is_ok(), "a puller without an identity takes Secrets as they come");
    let decrypting = Settings { decrypts: true, ..settings() };
    match desired(&clear, &decrypting) {
        Err(EngineError::Manifest { source_path, message }) => {
            assert_eq!(source_path, "ClusterProfile.web/Secret.web.db.yaml");
            assert!(message.contains("a Secret in clear") && message.contains("airlock.dev/plaintext-secrets"), "{message}");
        }
        other => panic!("expected a downgrade refusal, got {other:?}"),
    }
    let release = airlock_bundle::Release {
        settings: airlock_bundle::ClusterSettings { allow_plaintext_secrets: true, ..Default::default() },
        ..fixture.release(1)
    };
    let allowing = airlock_bundle::sign::sign(Fixture::bundle(files.clone()), &release, &|_| PartSettings::default(), &fixture.keys, None);
    assert!(desired(&opened(&allowing, &[]), &decrypting).is_ok(), "allowPlaintextSecrets lets it through");
    let identity = Identity::from_secret([5; 32]);
    let sealed = opened(&fixture.sealed(1, files, &[identity.recipient()]), &[identity]);
    let objects = desired(&sealed, &decrypting).expect("the decrypted Secret is taken");
    let source = &objects.iter().find(|o| o.id.kind == "Secret").expect("the Secret").source;
    assert_eq!(source, "ClusterProfile.web/Secret.web.db.yaml.age document 1");
}

/// `files` signed for the fixture's cluster with each file whose path ends in `.c.yaml`
/// (if any) sealed to `identity`, then verified and decrypted as a puller does.
fn sealing_c(files: Vec<(String, Vec<u8>)>, identity: &airlock_bundle::age::Identity) -> airlock_bundle::VerifiedBundle {
    use airlock_bundle::testkit::Fixture;
    let fixture = Fixture::new(1);
    let sealer = airlock_bundle::seal::Sealer::new(
        &fixture.cluster,
        vec![identity.recipient()],
        std::sync::Arc::new(airlock_bundle::mac::Secret::new(&[9; 32])),
    );
    let plain = Fixture::bundle(files);
    let parts = plain
        .parts()
        .map(|(name, part)| (name.to_string(), sealer.seal_part(name, part, |path, _| path.ends_with(".c.yaml"), &Limits::SPEC).unwrap()));
    let bundle = airlock_bundle::Bundle::from_parts(parts, &Limits::SPEC).unwrap();
    let any = bundle.files().any(|(path, _)| path.ends_with(".age"));
    let release = airlock_bundle::Release {
        settings: airlock_bundle::ClusterSettings { recipients: any.then(|| sealer.recipients()), ..Default::default() },
        ..fixture.release(1)
    };
    opened(&airlock_bundle::sign::sign(bundle, &release, &|_| PartSettings::default(), &fixture.keys, None), std::slice::from_ref(identity))
}

#[test]
fn objects_of_an_encrypted_file_are_marked_and_its_errors_quote_nothing_of_it() {
    let identity = airlock_bundle::age::Identity::from_secret([5; 32]);
    let confidential = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: web\ndata:\n  token: s3cr3t\n";
    let files = vec![
        ("ClusterProfile.web/ConfigMap.web.c.yaml".to_string(), confidential.as_bytes().to_vec()),
        ("ClusterProfile.web/cm.yaml".to_string(), CONFIG_MAP.as_bytes().to_vec()),
    ];
    let objects = desired(&sealing_c(files, &identity), &settings()).unwrap();
    let marks: Vec<(&str, bool)> = objects.iter().map(|o| (o.id.name.as_str(), o.sealed)).collect();
    assert!(marks.contains(&("c", true)) && marks.iter().filter(|(_, s)| *s).count() == 1, "{marks:?}");
    assert!(objects.iter().all(|o| o.source.contains(".age") == o.sealed), "marked exactly when read from a .age file");

    // A document the puller refuses: a clear file's message quotes it, a sealed one's does not.
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: web\n  annotations:\n    airlock.dev/adopt: s3cr3t\n";
    let refused = |path: &str| {
        let files = vec![(path.to_string(), bad.as_bytes().to_vec())];
        match desired(&sealing_c(files, &identity), &settings()) {
            Err(EngineError::Manifest { message, .. }) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    let clear = refused("ClusterProfile.web/ConfigMap.web.x.yaml");
    assert!(clear.contains("s3cr3t"), "in clear the reason is shown: {clear}");
    let withheld = refused("ClusterProfile.web/ConfigMap.web.c.yaml");
    assert!(!withheld.contains("s3cr3t") && withheld.contains("withheld"), "{withheld}");
    let unparsable = vec![("ClusterProfile.web/ConfigMap.web.c.yaml".to_string(), b"a: s3cr3t\na: s3cr3t\n".to_vec())];
    let error = desired(&sealing_c(unparsable, &identity), &settings()).unwrap_err().to_string();
    assert!(!error.contains("s3cr3t") && error.contains("ConfigMap.web.c.yaml.age"), "{error}");
}
