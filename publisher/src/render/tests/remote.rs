//! `remoteURL` references, with what the fetch brought recorded as `remote` records it:
//! rendered as a ConfigMap's data is, templated on request, failing their profile alone.

use serde_json::json;

use super::*;

/// A world with `profiles`, and the content (or failure) of every remote URL they name.
fn remote_world(profiles: &str, fetched: &dyn Fn(&str) -> Result<Option<serde_json::Value>, String>) -> (Inventory, Resources) {
    let (inv, mut res) = world(profiles);
    for p in &inv.profiles {
        for remote in p.policy_refs.iter().filter_map(|r| r.remote.as_ref()) {
            res.record(remote.key(), fetched(&remote.url));
        }
    }
    (inv, res)
}

fn data(files: &[(&str, &str)]) -> serde_json::Value {
    let data: BTreeMap<&str, &str> = files.iter().copied().collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "remote-url"}, "data": data})
}

const NS_AND_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-url, namespace: apps}\ndata: {a: b}\n";
const TEMPLATED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Cluster.metadata.name }}', namespace: apps}\n";

#[test]
fn remote_content_renders_like_a_config_map_templated_when_asked() {
    let cp = profile(
        "web",
        100,
        "region: eu",
        "{remoteURL: {url: 'https://h/a.yaml'}}, {remoteURL: {url: 'https://h/t.yaml', template: true}, skipNamespaceCreation: true}",
    );
    let w = remote_world(&cp, &|url| {
        Ok(Some(if url.ends_with("a.yaml") { data(&[("a.yaml", NS_AND_MAP)]) } else { data(&[("t.yaml", TEMPLATED)]) }))
    });
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let part = r.bundle.part("ClusterProfile.web").unwrap();
    let paths: Vec<&str> = part.files().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        [
            "ClusterProfile.web/ConfigMap.apps.eu-1.yaml",
            "ClusterProfile.web/ConfigMap.apps.from-url.yaml",
            "ClusterProfile.web/Namespace.cluster.apps.yaml"
        ]
    );
    assert!(file(&r, "ClusterProfile.web/ConfigMap.apps.eu-1.yaml").contains("name: eu-1"));
}

#[test]
fn a_failed_fetch_fails_its_profile_alone_naming_profile_index_and_url() {
    let bad = profile("bad", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}, {remoteURL: {url: 'https://h/x.yaml'}}");
    let good = profile("good", 100, "region: eu", "{remoteURL: {url: 'https://h/ok.yaml'}}");
    let defs = config_map("web", "defs", WEB);
    let w = remote_world(&format!("{bad}---\n{good}---\n{defs}"), &|url| {
        if url.ends_with("x.yaml") { Err("https://h/x.yaml: HTTP status 500".into()) } else { Ok(Some(data(&[("ok.yaml", NS_AND_MAP)]))) }
    });
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(
        failure(&r, "ClusterProfile.bad").unwrap().message,
        "ClusterProfile/bad: spec.policyRefs[1]: remoteURL https://h/x.yaml: HTTP status 500"
    );
    assert!(failure(&r, "ClusterProfile.good").is_none());
    assert_eq!(r.bundle.part("ClusterProfile.good").unwrap().files().count(), 2);
}

#[test]
fn a_remote_url_not_found_fails_unless_optional() {
    let cp = profile("web", 100, "region: eu", "{remoteURL: {url: 'https://h/gone.yaml?sig=secret'}}");
    let r = render_for(&remote_world(&cp, &|_| Ok(None)), "fleet/eu-1").unwrap();
    assert_eq!(
        failure(&r, "ClusterProfile.web").unwrap().message,
        "ClusterProfile/web: spec.policyRefs[0]: remoteURL https://h/gone.yaml not found"
    );
    let optional = cp.replace("sig=secret'}}", "sig=secret'}, optional: true}");
    let r = render_for(&remote_world(&optional, &|_| Ok(None)), "fleet/eu-1").unwrap();
    assert!(failure(&r, "ClusterProfile.web").is_none());
    assert!(
        r.warnings.iter().any(|w| w.contains("spec.policyRefs[0]: optional remoteURL https://h/gone.yaml not found")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn a_profile_reads_remote_credentials_only_from_its_namespace() {
    let p = "apiVersion: config.projectsveltos.io/v1beta1\nkind: Profile\nmetadata: {name: db, namespace: fleet}\n\
             spec:\n  clusterSelector: {matchLabels: {region: eu}}\n  \
             policyRefs: [{remoteURL: {url: 'https://h/x.yaml', secretRef: {namespace: other, name: creds}}}]\n";
    let r = render_for(&remote_world(p, &|_| Ok(Some(data(&[])))), "fleet/eu-1").unwrap();
    let message = &failure(&r, "Profile.fleet.db").unwrap().message;
    assert!(
        message.contains("spec.policyRefs[0].remoteURL.secretRef: Secret other/creds is outside the Profile's namespace fleet"),
        "{message}"
    );
}
