//! Parts of profiles that no longer deploy to the cluster and withdraw what they deployed:
//! held for the delete hooks `publish::withdraw` carries of them, and left out when it
//! carries none.

use std::sync::Arc;

use super::sveltos::stored;
use super::*;

/// A Helm release's object as a bundle holds it; `hook` names its site hook events.
fn release_object(name: &str, hook: Option<&str>) -> String {
    let annotations = hook.map(|h| format!(", annotations: {{airlock.dev/hook: '{h}'}}")).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps, labels: {{airlock.dev/helm-release: web}}{annotations}}}\n"
    )
}

/// `web` (with a release's object and its pre-delete hook) and `base`, both in region eu.
fn both() -> String {
    let web = format!("{}---\n{}", release_object("app", None), release_object("backup", Some("pre-delete")));
    format!(
        "{}---\n{}---\n{}",
        profile("web", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}"),
        config_map("web", "defs", &web),
        profile("base", 100, "region: eu", ""),
    )
}

fn part_paths(r: &Rendered, part: &str) -> Vec<String> {
    r.bundle.part(part).map(|p| p.files().map(|(path, _)| path.to_string()).collect()).unwrap_or_default()
}

/// `kept` with the web part's content cut to its delete hook, as `withdraw` carries it.
fn carried(kept: &BTreeMap<String, KeptContent>) -> BTreeMap<String, KeptContent> {
    let web = &kept["ClusterProfile.web"];
    let files = web.part.files().filter(|(p, _)| p.contains("backup")).map(|(p, b)| (p.to_string(), b.to_vec()));
    let part = airlock_bundle::Part::new("ClusterProfile.web", files, &Limits::SPEC).unwrap();
    BTreeMap::from([("ClusterProfile.web".to_string(), KeptContent { part, keys: Vec::new(), kept_from: web.kept_from, recipients: None })])
}

#[test]
fn a_withdrawn_part_ships_what_is_carried_of_it_or_nothing() {
    let first = render_for(&world(&both()), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&first, 4);
    let without = world(&profile("base", 100, "region: eu", ""));

    let r = render_stored(&renderer(&without.1), &without, "fleet/eu-1", Some((&statement, &carried(&kept)))).unwrap();
    assert_eq!(part_paths(&r, "ClusterProfile.web"), ["ClusterProfile.web/ConfigMap.apps.backup.yaml"]);
    assert!(failure(&r, "ClusterProfile.web").is_none(), "a withdrawal is no failure");
    assert!(r.failures.is_empty() && r.warnings.is_empty(), "{:?} {:?}", r.failures, r.warnings);

    let r = render_stored(&renderer(&without.1), &without, "fleet/eu-1", Some((&statement, &BTreeMap::new()))).unwrap();
    assert_eq!(r.bundle.parts().map(|(n, _)| n).collect::<Vec<_>>(), ["ClusterProfile.base"], "nothing carried: the part goes");

    let leave =
        "spec:\n  stopMatchingBehavior: LeavePolicies\n  tier: 100\n  clusterSelector: {matchLabels: {region: eu}}\n  policyRefs: [{kind";
    let first = render_for(
        &world(&both().replace("spec:\n  tier: 100\n  clusterSelector: {matchLabels: {region: eu}}\n  policyRefs: [{kind", leave)),
        "fleet/eu-1",
    )
    .unwrap();
    let (statement, kept) = stored(&first, 4);
    let r = render_stored(&renderer(&without.1), &without, "fleet/eu-1", Some((&statement, &carried(&kept)))).unwrap();
    assert!(r.bundle.part("ClusterProfile.web").is_none(), "LeavePolicies leaves the release: no hook to carry");
}

#[test]
fn a_carried_hook_gives_way_to_a_part_that_deploys_it_now() {
    let first = render_for(&world(&both()), "fleet/eu-1").unwrap();
    let (statement, kept) = stored(&first, 4);
    let moved = both().replace("metadata: {name: web}", "metadata: {name: moved}");
    let w = world(&moved);
    let r = render_stored(&renderer(&w.1), &w, "fleet/eu-1", Some((&statement, &carried(&kept)))).unwrap();
    assert!(r.bundle.part("ClusterProfile.web").is_none(), "its only hook is deployed by the profile the release moved to");
    assert!(part_paths(&r, "ClusterProfile.moved").contains(&"ClusterProfile.moved/ConfigMap.apps.backup.yaml".to_string()));
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}

#[test]
fn a_fresh_part_carries_the_hooks_of_a_release_it_dropped_unless_deployed() {
    let w = world(&both());
    let (inv, _) = &w;
    let r = renderer(&w.1);
    let c = inv.clusters.iter().find(|c| c.id.to_string() == "fleet/eu-1").unwrap();
    let prepared = r.prepare(&plan(c, select::profiles_for(c, inv), inv).unwrap()).unwrap();
    let hook = |name: &str| {
        let yaml = release_object(name, Some("pre-delete"));
        let key = ObjectKey::of(&yaml::parse_documents(&yaml).unwrap()[0]).unwrap();
        Arc::new(Object { key, origin: "carried".into(), yaml: yaml.into(), implicit: false, confidential: false })
    };
    let mut decided = hold::plan(&prepared, None, &hold::Unplanned::of(inv), &BTreeSet::new(), &BTreeMap::new());
    decided.carried.insert("ClusterProfile.base".into(), vec![hook("dump"), hook("backup")]);
    let Assembly::Done(done) = r.assemble(&prepared, &decided, &BTreeMap::new(), true).unwrap() else { unreachable!() };
    assert_eq!(part_paths(&done, "ClusterProfile.base"), ["ClusterProfile.base/ConfigMap.apps.dump.yaml"], "web deploys backup itself");
    assert_eq!(file(&done, "ClusterProfile.base/ConfigMap.apps.dump.yaml"), release_object("dump", Some("pre-delete")));
    assert!(part_paths(&done, "ClusterProfile.web").contains(&"ClusterProfile.web/ConfigMap.apps.backup.yaml".to_string()));
}
