//! The Sveltos features of rendering, one cluster at a time.

use airlock_bundle::ClusterSettings;
use airlock_bundle::sign::{self, PartDigests};
use airlock_bundle::statement::{Statement, Support};
use airlock_bundle::{PartSettings, Release};

use super::*;

/// A template ConfigMap: `projectsveltos.io/template` set.
fn template_map(name: &str, body: &str) -> String {
    config_map(name, "defs", body).replace(
        &format!("metadata: {{name: {name}, namespace: defs}}"),
        &format!("metadata: {{name: {name}, namespace: defs, annotations: {{projectsveltos.io/template: \"ok\"}}}}"),
    )
}

fn annotated(name: &str, annotations: &str, body: &str) -> String {
    config_map(name, "defs", body).replace(
        &format!("metadata: {{name: {name}, namespace: defs}}"),
        &format!("metadata: {{name: {name}, namespace: defs, annotations: {{{annotations}}}}}"),
    )
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: apps}\ndata: {x: '1'}\n";

/// The store's statement for `r` at `version`, and the content of each of its parts.
pub(super) fn stored(r: &Rendered, version: u64) -> (Statement, BTreeMap<String, KeptContent>) {
    let release = Release {
        cluster: r.cluster.clone(),
        version,
        issued_at: now(),
        expires: now().checked_add(jiff::SignedDuration::from_hours(24)).unwrap(),
        keyring_version: 1,
        settings: ClusterSettings {
            recipients: r.recipients.clone(),
            allow_plaintext_secrets: r.allow_plaintext_secrets,
            allow_mass_prune: r.allow_mass_prune,
            cluster_scoped: r.cluster_scoped.clone(),
            ..ClusterSettings::default()
        },
        decommission: false,
    };
    let statement = sign::statement(&r.bundle, &release, &|p| r.settings.get(p).cloned().unwrap_or_default(), &PartDigests::default());
    let kept = r
        .bundle
        .parts()
        .map(|(name, part)| {
            let keys = part
                .files()
                .filter(|(p, _)| part.plaintext(p).is_none())
                .flat_map(|(_, b)| yaml::parse_documents(std::str::from_utf8(b).unwrap()).unwrap())
                .filter_map(|d| ObjectKey::of(&d))
                .collect();
            let entry = statement.predicate.profiles.iter().find(|e| e.name == name).unwrap();
            let kept_from = entry.failure.as_ref().and_then(|f| f.kept_from).unwrap_or(version);
            let sealed = part.files().any(|(p, _)| part.plaintext(p).is_some());
            let recipients = r.recipients.clone().filter(|_| sealed);
            (name.to_string(), KeptContent { part: part.clone(), keys, kept_from, recipients })
        })
        .collect();
    (statement, kept)
}

#[test]
fn policy_ref_names_are_templates_resolved_per_cluster() {
    let w = world(&format!(
        "{}---\n{}",
        profile("web", 100, "", "{kind: ConfigMap, namespace: defs, name: 'nginx-{{ .Cluster.metadata.name }}'}")
            .replace("clusterSelector: {matchLabels: {}}", "clusterSelector: {matchExpressions: [{key: region, operator: Exists}]}"),
        config_map("nginx-eu-1", "defs", CM)
    ));
    assert!(render_for(&w, "fleet/eu-1").unwrap().bundle.files().any(|(p, _)| p == "ClusterProfile.web/ConfigMap.apps.app.yaml"));
    let us = render_for(&w, "fleet/us-1").unwrap();
    assert_eq!(
        failure(&us, "ClusterProfile.web").unwrap().message,
        "ClusterProfile/web: spec.policyRefs[0]: ConfigMap defs/nginx-us-1 (from the template \"nginx-{{ .Cluster.metadata.name }}\") not found"
    );
}

#[test]
fn rejects_a_failing_name_template_for_that_profile_alone() {
    let w = world(&format!(
        "{}---\n{}---\n{}",
        profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: '{{ .Cluster.metadata.labels.zone }}'}"),
        profile("ok", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: plain}"),
        config_map("plain", "defs", CM)
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let message = &failure(&r, "ClusterProfile.web").unwrap().message;
    assert!(
        message.starts_with("ClusterProfile/web: spec.policyRefs[0].name: the template \"{{ .Cluster.metadata.labels.zone }}\""),
        "{message}"
    );
    assert!(failure(&r, "ClusterProfile.ok").is_none() && r.bundle.part("ClusterProfile.ok").unwrap().files().count() == 2);
}

#[test]
fn content_templates_see_sveltos_data_and_its_superset() {
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: who, namespace: apps}\ndata:\n  a: '{{ .ClusterNamespace }}/{{ .ClusterName }}'\n  b: '{{ if .InfrastructureProvider }}capi{{ else }}none{{ end }}'\n";
    let w = world(&format!(
        "{}---\n{}",
        profile("t", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: t}"),
        template_map("t", body)
    ));
    let who = file(&render_for(&w, "fleet/eu-1").unwrap(), "ClusterProfile.t/ConfigMap.apps.who.yaml").to_string();
    assert!(who.contains("a: fleet/eu-1") && who.contains("b: none"), "{who}");
}

#[test]
fn lua_runs_and_its_output_is_a_manifest_like_any_other() {
    let script = "function evaluate()\n  return {resources = [[\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-lua\n  namespace: apps\n]]}\nend\n";
    let w = world(&format!(
        "{}---\n{}",
        profile("lua", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: l}"),
        annotated("l", "projectsveltos.io/lua: ok", script)
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert!(file(&r, "ClusterProfile.lua/ConfigMap.apps.from-lua.yaml").contains("name: from-lua"));
    assert!(
        r.bundle.files().any(|(p, _)| p == "ClusterProfile.lua/Namespace.cluster.apps.yaml"),
        "Lua output gets implicit namespaces too"
    );
    let bad = script.replace("kind: ConfigMap\n", "");
    let w = world(&format!(
        "{}---\n{}",
        profile("lua", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: l}"),
        annotated("l", "projectsveltos.io/lua: ok", &bad)
    ));
    let message = failure(&render_for(&w, "fleet/eu-1").unwrap(), "ClusterProfile.lua").unwrap().message.clone();
    assert!(message.starts_with("ClusterProfile/lua: ConfigMap defs/l key objects.yaml document 1: not a Kubernetes object"), "{message}");
}

#[test]
fn the_template_annotation_wins_over_lua() {
    let w = world(&format!(
        "{}---\n{}",
        profile("both", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: b}"),
        annotated("b", "projectsveltos.io/lua: ok, projectsveltos.io/template: ok", &CM.replace("name: app", "name: '{{ .ClusterName }}'"))
    ));
    assert!(render_for(&w, "fleet/eu-1").unwrap().bundle.files().any(|(p, _)| p == "ClusterProfile.both/ConfigMap.apps.eu-1.yaml"));
}

#[test]
fn patches_apply_to_every_object_in_sveltos_order() {
    let patches = "  patches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /metadata/labels\n        value: {cluster: '{{ .ClusterName }}'}\n  patchesFrom:\n  - {kind: ConfigMap, namespace: defs, name: plain}\n  - {kind: ConfigMap, namespace: defs, name: templated}\n";
    let entry = |value: &str| {
        format!("patch: |\n  - op: add\n    path: /metadata/annotations\n    value: {{by: {value}}}\ntarget: {{kind: ConfigMap}}\n")
    };
    let w = world(&format!(
        "{}{patches}---\n{}---\n{}---\n{}",
        profile("p", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: m}"),
        config_map("m", "defs", CM),
        config_map("plain", "defs", &entry("plain")),
        template_map("templated", &entry("'{{ .ClusterName }}'")),
    ));
    let app = file(&render_for(&w, "fleet/eu-1").unwrap(), "ClusterProfile.p/ConfigMap.apps.app.yaml").to_string();
    assert!(app.contains("cluster: eu-1"), "spec.patches are templated: {app}");
    // Templated patchesFrom values apply before the others, whatever the list says.
    assert!(app.contains("by: plain"), "{app}");
    let mut broken = w.1.clone();
    let (_, bad) = world(&config_map("plain", "defs", "patch: |\n  - op: remove\n    path: /nowhere/x\ntarget: {kind: ConfigMap}\n"));
    let key = ObjectKey::new("v1", "ConfigMap", "defs", "plain");
    broken.insert(key.clone(), bad.get(&key).unwrap().clone());
    let r = render_for(&(w.0, broken), "fleet/eu-1").unwrap();
    assert!(failure(&r, "ClusterProfile.p").is_none(), "a remove of a missing path is dropped, as Sveltos does");
}

#[test]
fn implicit_namespaces_are_create_only_unless_skipped_or_deployed() {
    let w = world(&format!(
        "{}---\n{}---\n{}---\n{}",
        profile("a", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: m}"),
        profile("b", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: nx, skipNamespaceCreation: true}"),
        config_map("m", "defs", CM),
        config_map("nx", "defs", &CM.replace("name: app", "name: other").replace("apps", "team")),
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let ns = file(&r, "ClusterProfile.a/Namespace.cluster.apps.yaml");
    assert_eq!(ns, "apiVersion: v1\nkind: Namespace\nmetadata:\n  annotations:\n    airlock.dev/create-only: \"true\"\n  name: apps\n");
    assert!(!r.bundle.files().any(|(p, _)| p.contains("Namespace.cluster.team")), "skipNamespaceCreation");
    let web = render_for(&world(&web_profile("w")), "fleet/eu-1").unwrap();
    assert!(!file(&web, "ClusterProfile.w/Namespace.cluster.web.yaml").contains("create-only"), "the profile deploys it");
}

#[test]
fn a_forced_reference_marks_its_objects_for_recreation() {
    let w = world(&format!(
        "{}---\n{}---\n{}",
        profile(
            "p",
            100,
            "region: eu",
            "{kind: ConfigMap, namespace: defs, name: a, force: true}, {kind: ConfigMap, namespace: defs, name: b}"
        ),
        config_map("a", "defs", CM),
        config_map("b", "defs", &CM.replace("name: app", "name: other")),
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert!(file(&r, "ClusterProfile.p/ConfigMap.apps.app.yaml").contains("airlock.dev/force-recreate: \"true\""));
    assert!(!file(&r, "ClusterProfile.p/ConfigMap.apps.other.yaml").contains("force-recreate"));
    assert!(
        !file(&r, "ClusterProfile.p/Namespace.cluster.apps.yaml").contains("force-recreate"),
        "the implicit Namespace is not the reference's"
    );
}

#[test]
fn the_reference_tier_decides_within_a_profile() {
    let text = |tier_b: u32| {
        format!(
            "{}---\n{}---\n{}",
            profile(
                "p",
                100,
                "region: eu",
                &format!("{{kind: ConfigMap, namespace: defs, name: a}}, {{kind: ConfigMap, namespace: defs, name: b, tier: {tier_b}}}")
            ),
            config_map("a", "defs", &CM.replace("'1'", "from-a")),
            config_map("b", "defs", &CM.replace("'1'", "from-b")),
        )
    };
    assert!(file(&render_for(&world(&text(10)), "fleet/eu-1").unwrap(), "ClusterProfile.p/ConfigMap.apps.app.yaml").contains("from-b"));
    let r = render_for(&world(&text(100)), "fleet/eu-1").unwrap();
    assert!(
        failure(&r, "ClusterProfile.p")
            .unwrap()
            .message
            .starts_with("conflict: ConfigMap apps/app is deployed at tier 100 by ClusterProfile/p: ConfigMap defs/a")
    );
}

#[test]
fn prerequisites_are_deployed_where_dependents_match_and_first() {
    let prerequisite = "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {name: base}\nspec:\n  policyRefs: [{kind: ConfigMap, namespace: defs, name: m}]\n";
    let w = world(&format!(
        "{}  dependsOn: [base]\n---\n{prerequisite}---\n{}",
        profile("app", 100, "region: eu", ""),
        config_map("m", "defs", CM)
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(r.settings["ClusterProfile.app"].depends_on, ["ClusterProfile.base"]);
    assert!(r.bundle.files().any(|(p, _)| p == "ClusterProfile.base/ConfigMap.apps.app.yaml"), "base has no selector of its own");
    assert!(render_for(&w, "fleet/us-1").unwrap().bundle.parts().next().is_none(), "no dependent there, no prerequisite");
    let missing = world(&format!("{}  dependsOn: [nowhere]\n", profile("app", 100, "region: eu", "")));
    let message = failure(&render_for(&missing, "fleet/eu-1").unwrap(), "ClusterProfile.app").unwrap().message.clone();
    assert!(message.contains("spec.dependsOn names ClusterProfile/nowhere, which does not exist"), "{message}");
}

#[test]
fn a_part_held_back_keeps_its_stored_content_as_a_warning_not_a_failure() {
    let text = |m: &str| {
        format!("{}---\n{}", profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: m}"), config_map("m", "defs", m))
    };
    let first = render_for(&world(&text(CM)), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&first, 3);
    let changed = world(&text(&CM.replace("name: app", "name: app-2")));
    let why = BTreeMap::from([("ClusterProfile.web".to_string(), "held back by spec.maxUpdate".to_string())]);
    let r = render_held_back(&renderer(&changed.1), &changed, "fleet/eu-1", Some((&statement, &kept)), &why).unwrap();
    assert_eq!(r.bundle.part("ClusterProfile.web").unwrap().tar(), first.bundle.part("ClusterProfile.web").unwrap().tar());
    let f = failure(&r, "ClusterProfile.web").unwrap();
    assert_eq!((f.kept_from, f.message.as_str()), (Some(3), "held back by spec.maxUpdate"));
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.warnings, ["ClusterProfile.web: held back by spec.maxUpdate"]);

    // Never deployed there yet: held back, the part is empty.
    let r = render_held_back(&renderer(&changed.1), &changed, "fleet/eu-1", None, &why).unwrap();
    assert_eq!(
        (failure(&r, "ClusterProfile.web").unwrap().kept_from, r.bundle.part("ClusterProfile.web").unwrap().files().count()),
        (None, 0)
    );
}

#[test]
fn a_failed_profile_keeps_its_last_good_part_and_the_others_proceed() {
    let text = |m: &str| {
        format!(
            "{}---\n{}---\n{}  dependsOn: [web]\n---\n{}",
            profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: m}"),
            config_map("m", "defs", m),
            profile("next", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: nx}"),
            config_map("nx", "defs", &CM.replace("name: app", "name: next")),
        )
    };
    let first = render_for(&world(&text(CM)), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&first, 3);
    let broken = world(&text("kind: Thing\n"));
    let r = render_stored(&renderer(&broken.1), &broken, "fleet/eu-1", Some((&statement, &kept))).unwrap();
    let f = failure(&r, "ClusterProfile.web").unwrap();
    assert_eq!(f.kept_from, Some(3));
    assert!(f.message.contains("ConfigMap defs/m key objects.yaml document 1"), "{f:?}");
    assert_eq!(r.bundle.part("ClusterProfile.web").unwrap().tar(), first.bundle.part("ClusterProfile.web").unwrap().tar());
    assert!(failure(&r, "ClusterProfile.next").is_none(), "a kept prerequisite does not hold its dependent back");

    // Kept again from a bundle that kept it: the version it came from is carried forward.
    let (statement, kept) = stored(&r, 4);
    let again = render_stored(&renderer(&broken.1), &broken, "fleet/eu-1", Some((&statement, &kept))).unwrap();
    assert_eq!(failure(&again, "ClusterProfile.web").unwrap().kept_from, Some(3));

    // Never rendered: an empty part, and its dependent held back.
    let r = render_for(&broken, "fleet/eu-1").unwrap();
    assert_eq!(
        (failure(&r, "ClusterProfile.web").unwrap().kept_from, r.bundle.part("ClusterProfile.web").unwrap().files().count()),
        (None, 0)
    );
    let next = failure(&r, "ClusterProfile.next").unwrap();
    assert!(next.message.starts_with("prerequisite ClusterProfile.web failed and never rendered"), "{next:?}");
}

#[test]
fn a_tie_goes_to_the_part_the_store_holds_it_in() {
    let text = |selector_a: &str| {
        format!(
            "{}  continueOnConflict: true\n---\n{}---\n{}---\n{}",
            profile("a", 100, selector_a, "{kind: ConfigMap, namespace: defs, name: a}"),
            profile("b", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: b}"),
            config_map("a", "defs", &CM.replace("'1'", "from-a")),
            config_map("b", "defs", &CM.replace("'1'", "from-b")),
        )
    };
    let before = render_for(&world(&text("region: us")), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&before, 1);
    // b's part holds the object in the store, so b keeps it though a sorts first; a, with
    // continueOnConflict, publishes the rest of it without the object.
    let w = world(&text("region: eu"));
    let r = render_stored(&renderer(&w.1), &w, "fleet/eu-1", Some((&statement, &kept))).unwrap();
    assert!(file(&r, "ClusterProfile.b/ConfigMap.apps.app.yaml").contains("from-b"));
    assert!(failure(&r, "ClusterProfile.a").is_none() && !r.bundle.files().any(|(p, _)| p == "ClusterProfile.a/ConfigMap.apps.app.yaml"));
    assert!(r.warnings.iter().any(|w| w.contains("drops ConfigMap apps/app (continueOnConflict)")), "{:?}", r.warnings);
}

#[test]
fn profile_settings_and_notes_are_relayed() {
    let w = world(&format!(
        "{}  continueOnError: true\n  maxConsecutiveFailures: 4\n  driftExclusions: [{{paths: [/spec/replicas], target: {{kind: Deployment}}}}]\n  reloader: true\n",
        profile("p", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: l, deploymentType: Local}")
    ));
    let s: &PartSettings = &render_for(&w, "fleet/eu-1").unwrap().settings["ClusterProfile.p"];
    assert!(s.continue_on_error && s.max_consecutive_failures == Some(4) && s.reloader);
    assert_eq!(s.drift_exclusions[0].paths, ["/spec/replicas"]);
    let notes: Vec<(&str, Support)> = s.notes.iter().map(|n| (n.field.as_str(), n.support)).collect();
    assert_eq!(notes, [("spec.policyRefs[0].deploymentType", Support::NotApplicable)]);
}

#[test]
fn random_values_stay_for_unchanged_inputs_and_differ_per_cluster() {
    let body = "apiVersion: v1\nkind: Secret\nmetadata: {name: pw, namespace: apps}\nstringData: {password: '{{ randAlphaNum 24 }}'}\n";
    let text = format!(
        "{}---\n{}",
        profile("r", 100, "", "{kind: ConfigMap, namespace: defs, name: r}")
            .replace("clusterSelector: {matchLabels: {}}", "clusterSelector: {matchExpressions: [{key: region, operator: Exists}]}"),
        template_map("r", body)
    );
    let password =
        |w: &(Inventory, Resources), c: &str| file(&render_for(w, c).unwrap(), "ClusterProfile.r/Secret.apps.pw.yaml").to_string();
    let world = world_allowing_clear;
    let (a, again) = (password(&world(&text), "fleet/eu-1"), password(&world(&text), "fleet/eu-1"));
    assert_eq!(a, again, "the same inputs draw the same values");
    assert_ne!(a, password(&world(&text), "fleet/us-1"));
    assert_ne!(
        a,
        password(&world(&text.replace("randAlphaNum 24", "randAlphaNum  24")), "fleet/eu-1"),
        "a changed template rolls new values"
    );
}

#[test]
fn a_clock_reading_part_records_when_it_rendered() {
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, namespace: apps}\ndata: {at: '{{ now | date \"2006\" }}'}\n";
    let w = world(&format!(
        "{}---\n{}---\n{}",
        profile("clock", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: c}"),
        template_map("c", body),
        profile("plain", 100, "region: eu", ""),
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let rendered = r.settings["ClusterProfile.clock"].rendered.clone().expect("the clock was read");
    assert_eq!(rendered.at, now());
    assert!(r.settings["ClusterProfile.plain"].rendered.is_none());
    let t = file(&r, "ClusterProfile.clock/ConfigMap.apps.t.yaml");
    assert!(t.contains("at: \"2026\""), "{t}");
    // Rendered again at the recorded time, with the same inputs, it is the same.
    let (inv, res) = &w;
    let c = inv.clusters.iter().find(|c| c.id.to_string() == "fleet/eu-1").unwrap();
    let p = plan(c, select::profiles_for(c, inv), inv).unwrap();
    let later = Renderer::new(
        res,
        &Limits::SPEC,
        Some(Entropy(std::sync::Arc::new(airlock_bundle::mac::Secret::new(&[7; 32])))),
        "2031-01-01T00:00:00Z".parse().unwrap(),
    );
    let pinned = later.prepare_part(&p.profiles[0], &p, rendered.at).unwrap();
    assert_eq!(pinned.clock, Some(rendered));
}

#[test]
fn paused_and_unreadable_profiles_keep_what_clusters_hold() {
    let good =
        format!("{}---\n{}", profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: m}"), config_map("m", "defs", CM));
    let first = render_for(&world(&good), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&first, 2);
    let paused =
        world(&good.replace("metadata: {name: web}", "metadata: {name: web, annotations: {profile.projectsveltos.io/paused: 'true'}}"));
    let r = render_stored(&renderer(&paused.1), &paused, "fleet/eu-1", Some((&statement, &kept))).unwrap();
    assert_eq!(r.bundle.part("ClusterProfile.web").unwrap().tar(), first.bundle.part("ClusterProfile.web").unwrap().tar());
    assert!(failure(&r, "ClusterProfile.web").is_none(), "paused is no failure");
    assert!(render_for(&paused, "fleet/eu-1").unwrap().bundle.parts().next().is_none(), "nobody gets it anew");

    let docs = yaml::parse_documents(&format!("{CLUSTERS}---\n{}", good.replace("tier: 100", "tier: high"))).unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("bad.yaml document 3".to_string(), d)));
    let res = Resources::found(docs.iter().filter_map(|d| ObjectKey::of(d).map(|k| (k, d.clone()))).collect());
    let w = (inv, res);
    let r = render_stored(&renderer(&w.1), &w, "fleet/eu-1", Some((&statement, &kept))).unwrap();
    let f = failure(&r, "ClusterProfile.web").unwrap();
    assert_eq!(f.kept_from, Some(2));
    assert!(f.message.starts_with("bad.yaml document 3: ClusterProfile/web: field spec.tier:"), "{f:?}");
}
