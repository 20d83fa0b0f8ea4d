//! A part's checks (spec 5.11) run by the real binary against the real API server:
//! `validateHealths` by Lua, CEL and Prometheus metrics keep a run failing (and
//! unrecorded) until the part is healthy; a failing `preDeployChecks` holds its part back
//! while the rest applies; `preDeleteChecks` keep a leaving part's objects until they
//! pass, and `postDeleteChecks` run once they are pruned; a check that cannot compile
//! refuses the bundle with nothing applied. Job checks need a node: `node/job_check.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use airlock_bundle::PartSettings;
use airlock_bundle::statement::{CelRule, Check, Checks, MetricQuery, Metrics, SecretName, Selection};
use airlock_e2e::assert_exit;
use airlock_e2e::puller::{Signing, Site, assert_refused};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Short enough that a failing validateHealths does not hold the test up.
const TIMEOUT: [&str; 2] = ["--check-timeout", "3s"];

/// The ConfigMaps of `ns` labelled `role=<role>`.
fn labelled(ns: &str, role: &str) -> Selection {
    Selection {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(ns.into()),
        name: None,
        label_selector: format!("role={role}"),
    }
}

fn check(name: &str, objects: Option<Selection>) -> Check {
    Check { name: name.into(), feature: "Resources".into(), objects, script: None, cel: vec![], metrics: None, job: None }
}

fn cel(name: &str, objects: Selection, rule: &str) -> Check {
    Check { cel: vec![CelRule { name: format!("{name}-rule"), rule: rule.into() }], ..check(name, Some(objects)) }
}

/// Settings of the parts named, with these checks.
fn with_checks(parts: &[(&str, Checks)]) -> Signing {
    let parts: BTreeMap<String, PartSettings> =
        parts.iter().map(|(part, checks)| (part.to_string(), PartSettings { checks: checks.clone(), ..PartSettings::default() })).collect();
    Signing { parts, ..Signing::default() }
}

/// A ConfigMap `name` of the part `part` labelled `role=<role>`, holding `value`.
fn labelled_file(part: &str, name: &str, ns: &str, role: &str, value: &str) -> (String, Vec<u8>) {
    let yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{role: {role}}}\ndata:\n  value: \"{value}\"\n"
    );
    (format!("{part}/ConfigMap.{ns}.{name}.yaml"), yaml.into_bytes())
}

/// The ConfigMap `name` of the site's application namespace, if it is there.
async fn config_map(site: &Site, name: &str) -> Option<ConfigMap> {
    Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns).get_opt(name).await.expect("ConfigMaps readable")
}

const LUA_OK: &str = r#"
function evaluate()
  local hs = {healthy = obj.data.value == "ok"}
  if not hs.healthy then hs.message = "value is " .. obj.data.value end
  return hs
end"#;

#[tokio::test(flavor = "multi_thread")]
async fn validate_healths_fail_the_run_until_the_part_is_healthy() {
    let site = Site::new("healths").await;
    let ns = site.app_ns.clone();
    let lua = Check { script: Some(LUA_OK.into()), ..check("lua-ok", Some(labelled(&ns, "probe"))) };
    let lua_only = Checks { validate_healths: vec![lua.clone()], ..Checks::default() };
    let files = |value: &str| {
        let mut files = site.files(0, "");
        files.push(labelled_file("ClusterProfile.app", "probe", &ns, "probe", value));
        files
    };
    site.publish("store", &[site.signed_as(1, files("bad"), with_checks(&[("ClusterProfile.app", lua_only)]), |_| {})]).await;
    let verified = site.run("verify", "store", &[]).await;
    assert!(verified.stdout.contains(r#"check: validateHealths "lua-ok""#), "verify lists the checks: {verified:?}");
    let unhealthy = site.run("sync", "store", &TIMEOUT).await;
    assert_exit(&unhealthy, 1);
    assert!(
        unhealthy.stderr.contains(r#"validateHealths "lua-ok": ConfigMap "#)
            && unhealthy.stderr.contains("/probe is not healthy: value is bad"),
        "{unhealthy:?}"
    );
    let probe = config_map(&site, "probe").await.expect("what applied stays");
    assert_eq!(probe.data.unwrap()["value"], "bad");
    assert_eq!(site.state_version().await, None, "a run whose checks failed records nothing");

    let both =
        Checks { validate_healths: vec![lua, cel("cel-ok", labelled(&ns, "probe"), "resource.data.value == 'ok'")], ..Checks::default() };
    site.publish("store", &[site.signed_as(2, files("ok"), with_checks(&[("ClusterProfile.app", both)]), |_| {})]).await;
    let healthy = site.run("sync", "store", &TIMEOUT).await;
    assert_exit(&healthy, 0);
    assert_eq!(site.state_version().await, Some(2));
}

/// A Prometheus-compatible endpoint on loopback answering every instant query with
/// `value`, to requests that carry `Bearer <token>` only.
async fn prometheus(value: Arc<AtomicU64>, token: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bound");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let value = f64::from_bits(value.load(Ordering::SeqCst));
            let mut request = vec![0; 4096];
            let n = stream.read(&mut request).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&request[..n]).to_string();
            let (status, body) = if !request.starts_with("GET /api/v1/query?query=") {
                ("404 Not Found", String::new())
            } else if !request.to_ascii_lowercase().contains(&format!("authorization: bearer {token}")) {
                ("401 Unauthorized", String::new())
            } else {
                (
                    "200 OK",
                    format!(
                        r#"{{"status":"success","data":{{"resultType":"vector","result":[{{"metric":{{}},"value":[1,"{value}"]}}]}}}}"#
                    ),
                )
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn a_metrics_check_reads_prometheus_with_the_clusters_credentials() {
    let site = Site::new("metrics").await;
    let errors = Arc::new(AtomicU64::new(5f64.to_bits()));
    let port = prometheus(errors.clone(), "s3cret").await;
    let secret = serde_json::from_value::<Secret>(serde_json::json!({
        "metadata": {"name": "prometheus-token"}, "stringData": {"token": "s3cret"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(site.client.clone(), &site.state_ns).create(&PostParams::default(), &secret).await.expect("Secret created");
    let metrics = Check {
        script: Some("function evaluate() return {healthy = metrics.errors < 1, message = metrics.errors .. \" errors\"} end".into()),
        metrics: Some(Metrics {
            url: format!("http://127.0.0.1:{port}"),
            path: "api/v1/query".into(),
            secret: Some(SecretName { namespace: site.state_ns.clone(), name: "prometheus-token".into() }),
            queries: vec![MetricQuery { name: "errors".into(), query: "sum(rate(http_errors_total[5m]))".into() }],
        }),
        ..check("error-rate", None)
    };
    let checks = Checks { validate_healths: vec![metrics], ..Checks::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "x"), with_checks(&[("ClusterProfile.app", checks)]), |_| {})]).await;
    let failing = site.run("sync", "store", &TIMEOUT).await;
    assert_exit(&failing, 1);
    assert!(failing.stderr.contains(r#"validateHealths "error-rate": not healthy: 5 errors"#), "{failing:?}");
    errors.store(0f64.to_bits(), Ordering::SeqCst);
    assert_exit(&site.run("sync", "store", &TIMEOUT).await, 0);
    assert_eq!(site.state_version().await, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_pre_deploy_check_holds_its_part_back_and_the_rest_applies() {
    let site = Site::new("predeploy").await;
    let ns = site.app_ns.clone();
    let gate = Checks { pre_deploy: vec![cel("gate-open", labelled(&ns, "gate"), "resource.data.value == 'open'")], ..Checks::default() };
    let mut files = site.files(1, "x");
    files.push(labelled_file("ClusterProfile.gated", "gated", &ns, "payload", "y"));
    site.publish("store", &[site.signed_as(1, files, with_checks(&[("ClusterProfile.gated", gate)]), |_| {})]).await;
    let held = site.run("sync", "store", &TIMEOUT).await;
    assert_exit(&held, 1);
    assert!(held.stderr.contains(&format!(r#"preDeployChecks "gate-open": found no v1 ConfigMap in {ns} with role=gate"#)), "{held:?}");
    let applied = site.config_maps().await;
    assert!(
        applied.contains_key("cm-0") && !applied.contains_key("gated"),
        "the other part applied, the gated one not: {:?}",
        applied.keys()
    );

    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &ns);
    let gate_file = labelled_file("x", "gate", &ns, "gate", "open").1;
    let gate: ConfigMap = serde_saphyr::from_slice(&gate_file).expect("a ConfigMap");
    config_maps.create(&PostParams::default(), &gate).await.expect("gate created");
    assert_exit(&site.run("sync", "store", &TIMEOUT).await, 0);
    assert!(config_map(&site, "gated").await.is_some(), "applied once the check passed");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_checks_keep_a_leaving_part_until_they_pass() {
    let site = Site::new("deletes").await;
    let ns = site.app_ns.clone();
    let checks = Checks {
        pre_delete: vec![cel("drained", labelled(&ns, "blocker"), "resource.data.value == 'drained'")],
        post_delete: vec![cel("gone", labelled(&ns, "leaving"), "false")],
        ..Checks::default()
    };
    let mut files = site.files(1, "x");
    files.push(labelled_file("ClusterProfile.leaving", "leaving", &ns, "leaving", "y"));
    site.publish("store", &[site.signed_as(1, files, with_checks(&[("ClusterProfile.leaving", checks)]), |_| {})]).await;
    assert_exit(&site.run("sync", "store", &TIMEOUT).await, 0);
    assert_eq!(site.state().await.expect("state").delete_checks.len(), 1, "kept for when the part leaves");

    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &ns);
    let blocker: ConfigMap = serde_saphyr::from_slice(&labelled_file("x", "blocker", &ns, "blocker", "busy").1).expect("a ConfigMap");
    config_maps.create(&PostParams::default(), &blocker).await.expect("blocker created");
    site.publish("store", &[site.signed(2, site.files(1, "x"), |_| {})]).await;
    let blocked = site.run("sync", "store", &TIMEOUT).await;
    assert_exit(&blocked, 1);
    assert!(blocked.stderr.contains(r#"part ClusterProfile.leaving: preDeleteChecks "drained""#), "{blocked:?}");
    assert!(config_map(&site, "leaving").await.is_some(), "not pruned while the check fails");

    let drained = serde_json::json!({"data": {"value": "drained"}});
    config_maps.patch("blocker", &PatchParams::default(), &Patch::Merge(drained)).await.expect("drained");
    assert_exit(&site.run("sync", "store", &TIMEOUT).await, 0);
    assert!(config_map(&site, "leaving").await.is_none(), "pruned, and the post-delete check found it gone");
    let state = site.state().await.expect("state");
    assert_eq!((state.version, state.delete_checks.len()), (2, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_whose_cel_does_not_parse_refuses_the_bundle_before_anything_applies() {
    let site = Site::new("badcel").await;
    let broken = Checks { validate_healths: vec![cel("broken", labelled(&site.app_ns, "x"), "resource.(")], ..Checks::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "x"), with_checks(&[("ClusterProfile.app", broken)]), |_| {})]).await;
    let refused = site.sync("store").await;
    assert_refused(&refused, r#"validateHealths "broken": CEL rule "broken-rule""#);
    site.assert_untouched("nothing applied").await;
}
