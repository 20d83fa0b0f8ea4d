//! Rendering whole clusters from small management sets written inline; `sveltos` holds
//! the Sveltos features (templated references, Lua, patches, implicit namespaces,
//! dependsOn, failure isolation, clocks and random values).

mod evaluations;
mod events;
mod health_checks;
mod kustomize;
mod remote;
mod sealing;
mod sveltos;
mod tenants;
mod withdrawn;

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::statement::{RenderFailure, Statement};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::*;
use crate::sources::{Inventory, ObjectKey, select};
use crate::yaml;

const CLUSTERS: &str = r#"
apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {name: eu-1, namespace: fleet, labels: {region: eu}, annotations: {agent.projectsveltos.io/watch-namespaces: "apps"}}
spec: {pullMode: true}
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {name: us-1, namespace: fleet, labels: {region: us}}
spec: {pullMode: true}
"#;

fn world(extra: &str) -> (Inventory, Resources) {
    world_of(&format!("{CLUSTERS}---\n{extra}"))
}

/// As [`world`], with eu-1 and us-1, which have no age recipient, allowing Secrets in clear.
fn world_allowing_clear(extra: &str) -> (Inventory, Resources) {
    let clusters = CLUSTERS
        .replace(r#""apps"}}"#, r#""apps", airlock.dev/plaintext-secrets: allow}}"#)
        .replace("labels: {region: us}}", "labels: {region: us}, annotations: {airlock.dev/plaintext-secrets: allow}}");
    assert_eq!(clusters.matches("plaintext-secrets").count(), 2, "both clusters allow");
    world_of(&format!("{clusters}---\n{extra}"))
}

/// The world `text` makes, clusters and all.
fn world_of(text: &str) -> (Inventory, Resources) {
    let docs = yaml::parse_documents(text).unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    assert!(inv.broken.is_empty(), "{:?}", inv.broken);
    let res = Resources::found(docs.iter().filter_map(|d| ObjectKey::of(d).map(|k| (k, d.clone()))).collect());
    (inv, res)
}

/// The run's clock in these tests.
fn now() -> jiff::Timestamp {
    "2026-12-01T10:00:00Z".parse().unwrap()
}

fn renderer(res: &Resources) -> Renderer<'_> {
    Renderer::new(res, &Limits::SPEC, Some(Entropy(std::sync::Arc::new(airlock_bundle::mac::Secret::new(&[7; 32])))), now())
}

/// Renders a cluster as `publish` would with the store holding `stored` (the statement
/// and the content of the parts it keeps).
fn render_stored(
    renderer: &Renderer<'_>,
    world: &(Inventory, Resources),
    cluster: &str,
    stored: Option<(&Statement, &BTreeMap<String, KeptContent>)>,
) -> Result<Rendered, RenderError> {
    render_held_back(renderer, world, cluster, stored, &BTreeMap::new())
}

/// As [`render_stored`], with the parts `held_back` names held back by `maxUpdate`.
fn render_held_back(
    renderer: &Renderer<'_>,
    world: &(Inventory, Resources),
    cluster: &str,
    stored: Option<(&Statement, &BTreeMap<String, KeptContent>)>,
    held_back: &BTreeMap<String, String>,
) -> Result<Rendered, RenderError> {
    let (inv, _) = world;
    let c = inv.clusters.iter().find(|c| c.id.to_string() == cluster).unwrap();
    let p = plan(c, select::profiles_for(c, inv), inv)?;
    let prepared = renderer.prepare(&p)?;
    let empty = BTreeMap::new();
    let (statement, kept) = stored.map_or((None, &empty), |(s, k)| (Some(s), k));
    let decided = hold::plan(&prepared, statement, &hold::Unplanned::of(inv), &BTreeSet::new(), held_back);
    match renderer.assemble(&prepared, &decided, kept, true)? {
        Assembly::Done(rendered) => Ok(*rendered),
        Assembly::Ties => unreachable!(),
    }
}

fn render_for(world: &(Inventory, Resources), cluster: &str) -> Result<Rendered, RenderError> {
    render_stored(&renderer(&world.1), world, cluster, None)
}

/// The failure part `part` carries.
fn failure<'a>(r: &'a Rendered, part: &str) -> Option<&'a RenderFailure> {
    r.settings[part].failure.as_ref()
}

fn file<'a>(r: &'a Rendered, path: &str) -> &'a str {
    let bytes = r
        .bundle
        .files()
        .find(|(p, _)| *p == path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", r.bundle.files().map(|f| f.0).collect::<Vec<_>>()))
        .1;
    std::str::from_utf8(bytes).unwrap()
}

fn profile(name: &str, tier: u32, selector: &str, refs: &str) -> String {
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\n\
         spec:\n  tier: {tier}\n  clusterSelector: {{matchLabels: {{{selector}}}}}\n  policyRefs: [{refs}]\n"
    )
}

/// A profile NAME in region eu deploying the ConfigMap `defs/web`, and that ConfigMap.
fn web_profile(name: &str) -> String {
    format!("{}---\n{}", profile(name, 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}"), config_map("web", "defs", WEB))
}

fn config_map(name: &str, namespace: &str, body: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\ndata:\n  objects.yaml: |\n{}",
        indent(body)
    )
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

const WEB: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: web}\ndata: {color: blue}\n";

#[test]
fn renders_parts_paths_labels_and_settings() {
    let w = world(&format!(
        "{}---\n{}\n  extraLabels: {{team: web}}\n  extraAnnotations: {{owner: ops}}\n  syncMode: ContinuousWithDriftDetection\n  dependsOn: [base]\n---\n{}---\n{}",
        profile("base", 100, "region: eu", ""),
        profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}").trim_end(),
        config_map("web", "defs", WEB),
        profile("empty", 100, "region: us", ""),
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(r.bundle.parts().map(|(n, _)| n).collect::<Vec<_>>(), ["ClusterProfile.base", "ClusterProfile.web"]);
    assert_eq!(r.objects, 2);
    assert_eq!(r.watch_namespaces, Some(vec!["apps".to_string()]));
    let ns = file(&r, "ClusterProfile.web/Namespace.cluster.web.yaml");
    assert_eq!(ns, "apiVersion: v1\nkind: Namespace\nmetadata:\n  annotations:\n    owner: ops\n  labels:\n    team: web\n  name: web\n");
    assert!(file(&r, "ClusterProfile.web/ConfigMap.web.settings.yaml").contains("color: blue"));
    let web = &r.settings["ClusterProfile.web"];
    assert_eq!(web.depends_on, ["ClusterProfile.base"]);
    assert_eq!(web.sync_mode, airlock_bundle::SyncMode::ContinuousWithDriftDetection);
    assert!(r.settings.values().all(|s| s.failure.is_none()));
    // A profile with nothing to deploy still gets its (empty) part.
    let us = render_for(&w, "fleet/us-1").unwrap();
    assert_eq!(us.bundle.parts().map(|(n, p)| (n, p.files().count())).collect::<Vec<_>>(), [("ClusterProfile.empty", 0)]);
    assert_eq!(us.watch_namespaces, None);
}

#[test]
fn same_inputs_render_the_same_digest() {
    let text = web_profile("web");
    let (a, b) = (render_for(&world(&text), "fleet/eu-1").unwrap(), render_for(&world(&text), "fleet/eu-1").unwrap());
    assert_eq!(a.bundle.digest(), b.bundle.digest());
    let changed = text.replace("color: blue", "color: red");
    assert_ne!(render_for(&world(&changed), "fleet/eu-1").unwrap().bundle.digest(), a.bundle.digest());
}

#[test]
fn lower_tier_wins_across_profiles_and_ties_fail_the_cluster() {
    let shared = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: apps}\ndata: {from: PLACE}\n";
    let text = |tier_b: u32| {
        format!(
            "{}---\n{}---\n{}---\n{}",
            profile("a", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: a}"),
            profile("b", tier_b, "region: eu", "{kind: ConfigMap, namespace: defs, name: b}"),
            config_map("a", "defs", &shared.replace("PLACE", "a")),
            config_map("b", "defs", &shared.replace("PLACE", "b")),
        )
    };
    let r = render_for(&world(&text(50)), "fleet/eu-1").unwrap();
    assert!(file(&r, "ClusterProfile.b/ConfigMap.apps.shared.yaml").contains("from: b"));
    assert_eq!(r.bundle.part("ClusterProfile.a").unwrap().files().count(), 0);
    assert!(r.warnings.iter().any(|w| w.contains("ClusterProfile.b (tier 50) wins over ClusterProfile.a (tier 100)")), "{:?}", r.warnings);
    // A tie with nothing stored: the first part by name keeps the object, the other fails
    // and, never rendered before, is left empty.
    let r = render_for(&world(&text(100)), "fleet/eu-1").unwrap();
    assert!(file(&r, "ClusterProfile.a/ConfigMap.apps.shared.yaml").contains("from: a"));
    let lost = failure(&r, "ClusterProfile.b").expect("b lost the tie");
    assert!(lost.message.starts_with("conflict: ConfigMap apps/shared is deployed at tier 100 by ClusterProfile.a too"), "{lost:?}");
    assert_eq!((lost.kept_from, r.bundle.part("ClusterProfile.b").unwrap().files().count()), (None, 0));
}

#[test]
fn secrets_must_be_manifest_secrets_and_are_decoded() {
    let secret = |type_: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: fleet}}\ntype: {type_}\ndata:\n  secret.yaml: {}\n",
            STANDARD.encode("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\nstringData: {password: hunter2}\n")
        )
    };
    // An empty policyRef namespace on a ClusterProfile means the cluster's namespace.
    let cp = profile("creds", 100, "region: eu", "{kind: Secret, name: creds}");
    let clear = world_allowing_clear(&format!("{cp}---\n{}", secret("addons.projectsveltos.io/cluster-profile")));
    let r = render_for(&clear, "fleet/eu-1").unwrap();
    assert!(file(&r, "ClusterProfile.creds/Secret.apps.db.yaml").contains("password: hunter2"));
    let r = render_for(&world(&format!("{cp}---\n{}", secret("Opaque"))), "fleet/eu-1").unwrap();
    let want = RenderError::NotManifests { object: "Secret fleet/creds".into(), actual: "Opaque".into() }.to_string();
    assert_eq!(failure(&r, "ClusterProfile.creds").unwrap().message, want);
    let bad = secret("addons.projectsveltos.io/cluster-profile").replace("secret.yaml: ", "secret.yaml: '!!notbase64'\n  x: ");
    let r = render_for(&world(&format!("{cp}---\n{bad}")), "fleet/eu-1").unwrap();
    assert!(failure(&r, "ClusterProfile.creds").unwrap().message.starts_with("Secret fleet/creds: "), "{:?}", r.settings);
}

#[test]
fn missing_references_fail_unless_optional() {
    let cp = profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: nowhere}");
    let r = render_for(&world(&cp), "fleet/eu-1").unwrap();
    assert_eq!(
        failure(&r, "ClusterProfile.web").unwrap().message,
        "ClusterProfile/web: spec.policyRefs[0]: ConfigMap defs/nowhere not found"
    );
    let optional = cp.replace("name: nowhere}", "name: nowhere, optional: true}");
    let r = render_for(&world(&optional), "fleet/eu-1").unwrap();
    assert!(r.warnings.iter().any(|w| w.contains("spec.policyRefs[0]: optional ConfigMap defs/nowhere not found")), "{:?}", r.warnings);
}

#[test]
fn unsupported_fields_are_reported_for_every_matched_cluster() {
    let chart = "{repositoryURL: 'http://127.0.0.1:1', chartName: nginx, releaseName: web, releaseNamespace: web, signatureVerification: {provider: PublicKey}}";
    let cp = format!("{}  helmCharts: [{chart}]\n", profile("web", 100, "region: eu", ""));
    let r = render_for(&world(&cp), "fleet/eu-1").unwrap();
    let field = "spec.helmCharts[].signatureVerification";
    assert!(r.warnings.iter().any(|w| w.starts_with(&format!("ClusterProfile/web: {field} (NotSupported): "))), "{:?}", r.warnings);
    let notes = &r.settings["ClusterProfile.web"].notes;
    assert_eq!(notes.iter().map(|n| n.field.as_str()).collect::<Vec<_>>(), [field]);
    let message = &failure(&r, "ClusterProfile.web").unwrap().message;
    assert!(message.contains("spec.helmCharts[0]: spec.helmCharts[0].signatureVerification is set"), "{message}");
}

#[test]
fn bad_documents_name_the_profile_resource_and_key() {
    let text = format!(
        "{}---\n{}",
        profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}"),
        config_map("web", "defs", "kind: Thing\n")
    );
    let r = render_for(&world(&text), "fleet/eu-1").unwrap();
    let message = &failure(&r, "ClusterProfile.web").unwrap().message;
    assert!(message.starts_with("ClusterProfile/web: ConfigMap defs/web key objects.yaml document 1:"), "{message}");
}

#[test]
fn templated_config_maps_see_the_cluster_and_mgmt_resources() {
    let text = format!(
        "{}  templateResourceRefs: [{{resource: {{kind: ConfigMap, name: \"{{{{ .Cluster.metadata.name }}}}-extra\"}}, identifier: Extra}}]\n---\n{}---\n{}",
        profile("tmpl", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: tmpl}"),
        config_map(
            "tmpl",
            "defs",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: info, namespace: apps}\ndata:\n  region: '{{ index .Cluster.metadata.labels \"region\" }}'\n  size: '{{ .MgmtResources.Extra.data.size }}'\n",
        )
        .replace("metadata: {name: tmpl, namespace: defs}", "metadata: {name: tmpl, namespace: defs, annotations: {projectsveltos.io/template: \"ok\"}}"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: eu-1-extra, namespace: fleet}\ndata: {size: large}\n",
    );
    let r = render_for(&world(&text), "fleet/eu-1").unwrap();
    let info = file(&r, "ClusterProfile.tmpl/ConfigMap.apps.info.yaml");
    assert!(info.contains("region: eu") && info.contains("size: large"), "{info}");
}

#[test]
fn dependency_cycles_fail_the_cluster() {
    let text =
        format!("{}  dependsOn: [b]\n---\n{}  dependsOn: [a]\n", profile("a", 100, "region: eu", ""), profile("b", 100, "region: eu", ""));
    assert!(matches!(render_for(&world(&text), "fleet/eu-1"), Err(RenderError::DependencyCycle { .. })));
}

#[test]
fn profiles_without_templates_are_prepared_once_for_all_clusters() {
    let shared = profile("web", 100, "", "{kind: ConfigMap, namespace: defs, name: web}")
        .replace("clusterSelector: {matchLabels: {}}", "clusterSelector: {matchExpressions: [{key: region, operator: Exists}]}");
    let templated = profile("info", 100, "", "{kind: ConfigMap, namespace: defs, name: info}")
        .replace("clusterSelector: {matchLabels: {}}", "clusterSelector: {matchExpressions: [{key: region, operator: Exists}]}");
    let info = config_map(
        "info",
        "defs",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: info, namespace: apps}\ndata: {name: '{{ .Cluster.metadata.name }}'}\n",
    )
    .replace(
        "metadata: {name: info, namespace: defs}",
        "metadata: {name: info, namespace: defs, annotations: {projectsveltos.io/template: \"ok\"}}",
    );
    let (inv, res) = world(&format!("{shared}---\n{templated}---\n{}---\n{info}", config_map("web", "defs", WEB)));
    let renderer = renderer(&res);
    let prepared: Vec<Vec<Arc<prepared::Prepared>>> = inv
        .clusters
        .iter()
        .map(|c| {
            let p = plan(c, select::profiles_for(c, &inv), &inv).unwrap();
            renderer.prepare(&p).unwrap().parts.into_iter().map(|d| d.outcome.unwrap()).collect()
        })
        .collect();
    let [eu, us] = [&prepared[0], &prepared[1]];
    // Part order: ClusterProfile.info, then ClusterProfile.web.
    assert!(Arc::ptr_eq(&eu[1], &us[1]), "the plain profile is shared");
    assert!(!Arc::ptr_eq(&eu[0], &us[0]));
    let says = |p: &prepared::Prepared, name: &str| p.objects.iter().any(|o| o.yaml.contains(&format!("name: {name}\n")));
    assert!(says(&eu[0], "eu-1") && says(&us[0], "us-1"));
}

#[test]
fn a_shared_profile_part_is_whole_only_where_nothing_overrides_it() {
    let every = "clusterSelector: {matchExpressions: [{key: region, operator: Exists}]}";
    let a = profile("a", 100, "", "{kind: ConfigMap, namespace: defs, name: a}").replace("clusterSelector: {matchLabels: {}}", every);
    let object = |name: &str, from: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps}}\ndata: {{from: {from}}}\n")
    };
    let (inv, res) = world(&format!(
        "{a}---\n{}---\n{}---\n{}",
        profile("b", 50, "region: eu", "{kind: ConfigMap, namespace: defs, name: b}"),
        config_map("a", "defs", &format!("{}---\n{}", object("shared", "a"), object("own", "a"))),
        config_map("b", "defs", &object("shared", "b")),
    ));
    let files = |r: &Rendered| r.bundle.part("ClusterProfile.a").unwrap().files().map(|(p, _)| p.to_string()).collect::<Vec<_>>();
    let own = "ClusterProfile.a/ConfigMap.apps.own.yaml";
    let both = [
        "ClusterProfile.a/ConfigMap.apps.own.yaml",
        "ClusterProfile.a/ConfigMap.apps.shared.yaml",
        "ClusterProfile.a/Namespace.cluster.apps.yaml",
    ];
    // Whichever cluster one renderer renders first, eu-1 loses `shared` to profile b and
    // us-1 keeps profile a whole.
    let w = (inv, res);
    for order in [["fleet/eu-1", "fleet/us-1"], ["fleet/us-1", "fleet/eu-1"]] {
        let renderer = renderer(&w.1);
        for id in order {
            let r = render_stored(&renderer, &w, id, None).unwrap();
            match id {
                "fleet/eu-1" => assert_eq!(files(&r), [own], "{order:?}"),
                _ => assert_eq!(files(&r), both, "{order:?}"),
            }
        }
    }
}

/// A cluster registered with `--token`, its management Secret (`expires` as annotation, a
/// login for `user`), and a profile deploying into `apps`.
/// It allows Secrets in clear, having no age recipient.
fn relayed_world(secret_annotations: &str, user: &str) -> (Inventory, Resources) {
    world(&relayed_text(secret_annotations, user).replace("ops}}", "ops, airlock.dev/plaintext-secrets: allow}}"))
}

/// The text of [`relayed_world`], without its allowance.
fn relayed_text(secret_annotations: &str, user: &str) -> String {
    let auth = STANDARD.encode(format!("{user}:pw"));
    let config = STANDARD.encode(format!(r#"{{"auths":{{"registry.example":{{"auth":"{auth}"}}}}}}"#));
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: tok-1, namespace: fleet, labels: {{region: eu}}, annotations: {{airlock.dev/store-credentials: tok-1-creds, airlock.dev/puller-namespace: ops}}}}\n\
         spec: {{pullMode: true}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: tok-1-creds, namespace: fleet{secret_annotations}}}\n\
         type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {config}}}\n---\n{}",
        web_profile("web"),
    )
}

/// With an offset and a fraction, which the relay writes as UTC whole seconds.
const EXPIRES: &str = ", annotations: {airlock.dev/expires-at: '2031-01-01T02:00:00.5+02:00'}";

#[test]
fn relays_the_management_secret_into_the_system_part() {
    let r = render_for(&relayed_world(EXPIRES, "puller-a"), "fleet/tok-1").unwrap();
    let parts: Vec<&str> = r.bundle.parts().map(|(n, _)| n).collect();
    assert_eq!(parts, ["Airlock.system", "ClusterProfile.web"]);
    let secret: serde_json::Value = serde_saphyr::from_str(file(&r, "Airlock.system/Secret.ops.airlock-store-credentials.yaml")).unwrap();
    assert_eq!(secret["metadata"]["namespace"], "ops");
    assert_eq!(secret["metadata"]["annotations"]["airlock.dev/expires-at"], "2031-01-01T00:00:00Z");
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    let config = STANDARD.decode(secret["data"][".dockerconfigjson"].as_str().unwrap()).unwrap();
    assert!(String::from_utf8(config).unwrap().contains(&STANDARD.encode("puller-a:pw")));
    assert_eq!(STANDARD.decode(secret["data"]["expires-at"].as_str().unwrap()).unwrap(), b"2031-01-01T00:00:00Z");
    let system = &r.settings["Airlock.system"];
    assert_eq!((system.tier, system.force_conflicts), (0, true));
    assert_eq!(system.stop_matching_behavior, airlock_bundle::StopMatchingBehavior::LeavePolicies);
    assert_eq!(r.objects, 3, "the relayed Secret counts as an object");

    // Renewed credentials change the bundle; the same credentials do not.
    let again = render_for(&relayed_world(EXPIRES, "puller-a"), "fleet/tok-1").unwrap();
    assert_eq!(again.bundle.digest(), r.bundle.digest());
    let renewed = render_for(&relayed_world(EXPIRES, "puller-b"), "fleet/tok-1").unwrap();
    assert_ne!(renewed.bundle.digest(), r.bundle.digest());
    // Without the annotation (no --token), no system part.
    let plain = render_for(&world(&web_profile("web")), "fleet/eu-1").unwrap();
    assert!(plain.bundle.parts().all(|(n, _)| n != "Airlock.system"));
}

#[test]
fn relayed_credentials_in_clear_fail_the_cluster_unless_it_allows_them() {
    let err = render_for(&world(&relayed_text(EXPIRES, "puller-a")), "fleet/tok-1").unwrap_err();
    assert!(matches!(&err, RenderError::Clear { cluster, .. } if cluster == "fleet/tok-1"), "{err}");
    let message = err.to_string();
    assert!(message.contains("the relayed store credentials (part Airlock.system)"), "{message}");
    assert!(message.contains("register cluster") && message.contains("airlock.dev/plaintext-secrets: allow"), "{message}");
    assert!(!message.contains(&STANDARD.encode("puller-a:pw")), "{message}");
}

#[test]
fn the_relayed_secret_wins_over_a_profile_deploying_the_same_object() {
    let (inv, mut res) = relayed_world(EXPIRES, "puller-a");
    let rogue = "apiVersion: v1\nkind: Secret\nmetadata: {name: airlock-store-credentials, namespace: ops}\ndata: {x: eA==}\n";
    let web = crate::sources::ObjectKey::new("v1", "ConfigMap", "defs", "web");
    let (_, cm) = world(&config_map("web", "defs", rogue));
    res.insert(web.clone(), cm.get(&web).unwrap().clone());
    let r = render_for(&(inv, res), "fleet/tok-1").unwrap();
    assert!(file(&r, "Airlock.system/Secret.ops.airlock-store-credentials.yaml").contains(".dockerconfigjson"));
    assert!(r.warnings.iter().any(|w| w.contains("Airlock.system (tier 0) wins over ClusterProfile.web")), "{:?}", r.warnings);
}

#[test]
fn relayed_credentials_without_secret_or_expiry_fail_naming_the_secret() {
    let cases = [
        ("", "Secret fleet/tok-1-creds: no annotation airlock.dev/expires-at"),
        (
            ", annotations: {airlock.dev/expires-at: soon}",
            "Secret fleet/tok-1-creds: annotation airlock.dev/expires-at \"soon\" is not an RFC 3339 time",
        ),
    ];
    for (annotations, want) in cases {
        let err = render_for(&relayed_world(annotations, "puller-a"), "fleet/tok-1").unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
    }
    let (inv, mut res) = relayed_world(EXPIRES, "puller-a");
    res.remove(&ObjectKey::new("v1", "Secret", "fleet", "tok-1-creds"));
    let err = render_for(&(inv, res), "fleet/tok-1").unwrap_err().to_string();
    assert!(err.starts_with("Secret fleet/tok-1-creds: not found"), "{err}");
}
