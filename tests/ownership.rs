//! What Airlock did not create it never takes over nor deletes, and a version that would
//! prune most of the inventory waits for a confirmation (bundles-format.md 2.5.4):
//! the real `airlock-puller` binary against the real managed API server
//! (`AIRLOCK_KUBECONFIG_MANAGED`), each attack refused with exit 3, its error, and nothing
//! written: no object, no state (which holds the floor), no inventory.

use airlock_bundle::report::RunResult;
use airlock_e2e::puller::{Site, app_files, assert_refused, config_map_file};
use airlock_e2e::{Run, assert_exit, create_namespace, service_env};
use airlock_puller::engine::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

/// `kubectl` on the site's API server with `input` on its stdin: its stdout; panics
/// unless it succeeds.
fn kubectl(site: &Site, args: &[&str], input: &str) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(service_env("AIRLOCK_KUBECTL"))
        .args(["--kubeconfig", &site.kubeconfig])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("input written");
    let out = child.wait_with_output().expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The error a plan prints on stderr, in its own words.
fn plan_error(plan: &Run) -> &str {
    plan.stderr.lines().find_map(|l| l.strip_prefix("error: ")).unwrap_or_else(|| panic!("no error line: {plan:?}"))
}

/// `airlock-puller plan` of the store: it must refuse (exit 3) as a sync would, naming
/// `why` in its heading, and write nothing.
async fn plan_refused(site: &Site, why: &str) -> Run {
    let before = site.versions().await;
    let plan = site.run("plan", "store", &[]).await;
    assert_refused(&plan, why);
    assert!(plan.stdout.contains(&format!("REFUSED: {why}")), "the heading says it: {plan:?}");
    assert_eq!(site.versions().await, before, "a plan writes nothing");
    plan
}

/// A ConfigMap someone made by hand in `namespace`, without Airlock's labels.
async fn foreign_config_map(site: &Site, namespace: &str, name: &str) -> ConfigMap {
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": namespace},
        "data": {"value": "made by hand"},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(site.client.clone(), namespace).create(&PostParams::default(), &cm).await.expect("created by hand")
}

/// `file` with `airlock.dev/adopt: "true"` added to its metadata.
fn adopting((path, yaml): (String, Vec<u8>)) -> (String, Vec<u8>) {
    let yaml = String::from_utf8(yaml).unwrap().replacen("metadata:\n", "metadata:\n  annotations:\n    airlock.dev/adopt: \"true\"\n", 1);
    (path, yaml.into_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_object_is_not_taken_over_unless_the_bundle_adopts_it_and_is_never_pruned() {
    let site = Site::new("foreign").await;
    create_namespace(&site.client, &site.app_ns).await;
    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    let foreign = foreign_config_map(&site, &site.app_ns, "cm-0").await;
    let ns = site.app_ns.clone();
    let v1 = vec![config_map_file("cm-0", &ns, "one"), config_map_file("cm-1", &ns, "one")];
    site.publish("store", &[site.signed(1, v1, |_| {})]).await;

    // The plan shows the refusal the sync then makes, in the same words, and the takeover.
    let plan = plan_refused(&site, "1 object(s) exist that Airlock did not create for this cluster").await;
    assert!(plan.stdout.contains(&format!("wouldConfigure  ConfigMap {ns}/cm-0")), "{plan:?}");
    assert!(plan.stdout.contains(&format!("wouldCreate     ConfigMap {ns}/cm-1")), "{plan:?}");
    assert_eq!(config_maps.get("cm-0").await.expect("there").metadata.resource_version, foreign.metadata.resource_version);
    let run = site.sync("store").await;
    assert_refused(&run, "1 object(s) exist that Airlock did not create for this cluster");
    assert!(run.stderr.contains(plan_error(&plan)), "the plan refuses in the sync's words: {plan:?}\n{run:?}");
    assert!(run.stderr.contains(&format!("ConfigMap {ns}/cm-0 (no airlock.dev/cluster label")), "{run:?}");
    assert!(run.stderr.contains("airlock.dev/adopt: \"true\""), "names the way to allow it: {run:?}");
    let after = config_maps.get("cm-0").await.expect("still there");
    assert_eq!(after.metadata.resource_version, foreign.metadata.resource_version, "the foreign object is untouched");
    assert!(config_maps.get_opt("cm-1").await.expect("get").is_none(), "nothing of the bundle is applied");
    assert!(site.state().await.is_none() && site.kept.inventory().await.is_none(), "no state, no inventory");
    assert_eq!(site.kept_report().await.report.result, RunResult::Rejected);

    // Adopted explicitly, it is applied and recorded as adopted; the plan says so first.
    let v2 = vec![adopting(config_map_file("cm-0", &ns, "two")), config_map_file("cm-1", &ns, "two")];
    site.publish("store", &[site.signed(2, v2, |_| {})]).await;
    let plan = site.run("plan", "store", &[]).await;
    assert_exit(&plan, 0);
    assert!(!plan.stdout.contains("REFUSED") && !plan.stderr.contains("error: "), "{plan:?}");
    assert_exit(&site.sync("store").await, 0);
    let adopted = config_maps.get("cm-0").await.expect("adopted");
    assert_eq!(adopted.data.as_ref().unwrap()["value"], "two");
    let inventory = site.kept.inventory().await.expect("inventory");
    let entry = |name: &str| inventory.objects.iter().find(|e| e.id.name == name).expect("in the inventory").clone();
    assert!(entry("cm-0").adopted && !entry("cm-1").adopted, "{:?}", inventory.objects);

    // Dropped from the bundle: the adopted object is released and stays; Airlock's own goes.
    site.publish("store", &[site.signed(3, vec![config_map_file("cm-2", &ns, "three")], |_| {})]).await;
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    let released = config_maps.get_opt("cm-0").await.expect("get").unwrap_or_else(|| panic!("the adopted object stays: {run:?}"));
    assert!(config_maps.get_opt("cm-1").await.expect("get").is_none(), "Airlock's own object is pruned");
    let inventory = site.kept.inventory().await.expect("inventory");
    assert_eq!(inventory.objects.iter().map(|e| e.id.name.as_str()).collect::<Vec<_>>(), ["cm-2"], "cm-0 is released");
    // Released, it carries no mark of Airlock's, and keeps what it holds.
    assert_unmarked(&released.metadata);
    assert_eq!(released.data.as_ref().unwrap()["value"], "two");

    // Named again, it is someone else's object once more: refused unless adopted again.
    let v4 = vec![config_map_file("cm-0", &ns, "four"), config_map_file("cm-2", &ns, "four")];
    site.publish("store", &[site.signed(4, v4, |_| {})]).await;
    let run = site.sync("store").await;
    assert_refused(&run, &format!("ConfigMap {ns}/cm-0 (no airlock.dev/cluster label"));
    let after = config_maps.get("cm-0").await.expect("still there");
    assert_eq!(after.metadata.resource_version, released.metadata.resource_version, "untouched");
}

/// Neither a label nor an annotation of Airlock's, nor its field manager.
fn assert_unmarked(meta: &ObjectMeta) {
    let airlock = |map: &Option<std::collections::BTreeMap<String, String>>| {
        map.iter().flatten().filter(|(k, _)| k.starts_with("airlock.dev/")).map(|(k, _)| k.clone()).collect::<Vec<_>>()
    };
    assert_eq!((airlock(&meta.labels), airlock(&meta.annotations)), (vec![], vec![]), "{meta:?}");
    let managers: Vec<_> = meta.managed_fields.iter().flatten().filter_map(|m| m.manager.as_deref()).collect();
    assert!(!managers.iter().any(|m| m.starts_with("airlock")), "{managers:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_adopted_crd_dropped_from_the_bundle_stays_with_its_instances() {
    let site = Site::new("crd").await;
    create_namespace(&site.client, &site.app_ns).await;
    let group = format!("{}.example.com", site.app_ns);
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  \
         group: {group}\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n    singular: widget\n    \
         listKind: WidgetList\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      \
         openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    );
    kubectl(&site, &["create", "-f", "-"], &crd);
    kubectl(&site, &["wait", "--for", "condition=established", "--timeout", "60s", &format!("crd/widgets.{group}")], "");
    let widget = format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {}\nspec:\n  size: 3\n", site.app_ns);
    kubectl(&site, &["create", "-f", "-"], &widget);
    let crd_name = format!("crd/widgets.{group}");
    let crd_version = || kubectl(&site, &["get", &crd_name, "-o", "jsonpath={.metadata.resourceVersion}"], "");
    let widget_name = || kubectl(&site, &["get", &format!("widgets.{group}"), "w", "-n", &site.app_ns, "-o", "name"], "");
    let crd_file = |yaml: &str| (format!("ClusterProfile.app/CustomResourceDefinition.widgets.{group}.yaml"), yaml.as_bytes().to_vec());
    let cm = config_map_file("cm-0", &site.app_ns, "one");

    // Without the annotation, the CRD is not taken over.
    let before = crd_version();
    site.publish("store", &[site.signed(1, vec![crd_file(&crd), cm.clone()], |_| {})]).await;
    let run = site.sync("store").await;
    assert_refused(&run, &format!("CustomResourceDefinition.apiextensions.k8s.io widgets.{group} (no airlock.dev/cluster label"));
    assert_eq!(crd_version(), before, "the CRD is untouched");
    assert!(site.state().await.is_none() && site.config_maps().await.is_empty());

    // Adopted, then dropped: the CRD and its instance stay.
    site.publish("store", &[site.signed(2, vec![adopting(crd_file(&crd)), cm.clone()], |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    assert!(site.kept.inventory().await.expect("inventory").objects.iter().any(|e| e.id.kind == "CustomResourceDefinition" && e.adopted));
    site.publish("store", &[site.signed(3, vec![cm], |_| {})]).await;
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    assert!(!crd_version().is_empty(), "the adopted CRD stays: {run:?}");
    let report = site.kept_report().await.report;
    let released = report.objects.iter().find(|o| o.id.kind == "CustomResourceDefinition").expect("the CRD is reported");
    let detail = "released: adopted, Airlock did not create it; its Airlock labels, annotations and field manager removed";
    assert_eq!((released.action, released.detail.as_deref()), (Action::Left, Some(detail)));
    let crds = Api::<CustomResourceDefinition>::all(site.client.clone());
    let crd_live = crds.get(&format!("widgets.{group}")).await.expect("the CRD");
    assert_unmarked(&crd_live.metadata);
    assert_eq!(crd_live.spec.names.kind, "Widget", "the CRD is whole");
    assert_eq!(widget_name().trim(), format!("widget.{group}/w"), "and so does its instance: {run:?}");
    kubectl(&site, &["delete", &crd_name, "--wait=false"], "");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mass_prune_is_held_until_confirmed_locally_or_by_the_signed_flag() {
    let site = Site::new("mass").await;
    site.publish("store", &[site.signed(1, site.files(12, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    let before = site.versions().await;
    assert_eq!(site.config_maps().await.len(), 12);

    // 11 of the 13 objects (Namespace and 12 ConfigMaps) would go: the plan shows the
    // hold the sync then makes, in the same words, and what would go once confirmed.
    site.publish("store", &[site.signed(2, site.files(1, "one"), |_| {})]).await;
    let held = "this version would prune 11 of the 13 objects in the inventory (more than 50 %): held";
    let plan = plan_refused(&site, held).await;
    assert_eq!(plan.stdout.lines().filter(|l| l.starts_with("wouldPrune ")).count(), 11, "{plan:?}");
    let run = site.sync("store").await;
    assert_refused(&run, held);
    assert!(run.stderr.contains(plan_error(&plan)), "the plan holds in the sync's words: {plan:?}\n{run:?}");
    assert!(run.stderr.contains("allowMassPrune") && run.stderr.contains("--allow-mass-prune"), "{run:?}");
    assert_eq!(site.versions().await, before, "no object, state or inventory written");
    assert_eq!(site.state_version().await, Some(1));
    assert_eq!(site.kept_report().await.report.result, RunResult::Rejected);

    // The local override lets it through, in a plan as in a sync.
    let plan = site.run("plan", "store", &["--allow-mass-prune"]).await;
    assert_exit(&plan, 0);
    assert!(!plan.stdout.contains("REFUSED"), "{plan:?}");
    let run = site.run("sync", "store", &["--allow-mass-prune"]).await;
    assert_exit(&run, 0);
    assert_eq!(site.config_maps().await.keys().collect::<Vec<_>>(), ["cm-0"]);
    assert_eq!(site.state_version().await, Some(2));

    // So does the bundle's signed confirmation.
    site.publish("store", &[site.signed(3, site.files(12, "three"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    site.publish("store", &[site.signed(4, app_files(&site.app_ns, 2, "four"), |r| r.settings.allow_mass_prune = true)]).await;
    let plan = site.run("plan", "store", &[]).await;
    assert_exit(&plan, 0);
    assert!(!plan.stdout.contains("REFUSED") && plan.stdout.contains("wouldPrune"), "{plan:?}");
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    assert_eq!(site.config_maps().await.keys().collect::<Vec<_>>(), ["cm-0", "cm-1"]);
    assert_eq!(site.state_version().await, Some(4));
}
