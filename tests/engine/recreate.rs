//! Objects marked for recreation (spec 2.5.2): an update the API server refuses as
//! immutable deletes and re-creates a marked object, by either annotation, and fails an
//! unmarked one, which stays as it was.

use airlock_puller::engine::{self, Action};
use kube::api::DynamicObject;

use super::{Files, Scenario, actions, detail, file, namespace};

/// A Job whose Pod template runs `image`: the template of a Job is immutable.
fn job(ns: &str, name: &str, annotation: &str, image: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    {annotation}\nspec:\n  \
         template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: {image}\n"
    )
}

/// An immutable ConfigMap holding `value`.
fn frozen(ns: &str, name: &str, annotation: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    {annotation}\nimmutable: true\ndata:\n  k: \"{value}\"\n"
    )
}

/// The live `kind` `name` of the test's namespace `app`.
async fn live(s: &Scenario, kind: &str, name: &str) -> DynamicObject {
    let api_version = if kind == "Job" { "batch/v1" } else { "v1" };
    s.get(api_version, kind, &s.ns("app"), name).await.expect("applied")
}

fn uid(object: &DynamicObject) -> String {
    object.metadata.uid.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marked_object_is_recreated_when_its_update_is_refused_and_an_unmarked_one_fails() {
    let mut s = Scenario::new("recreate").await;
    let ns = s.ns("app");
    let version = |image: &str, value: &str| -> Files {
        vec![
            file("ClusterProfile.base", "ns", namespace(&ns)),
            file("ClusterProfile.app", "job", job(&ns, "batch", "airlock.dev/force-recreate: \"true\"", image)),
            file("ClusterProfile.app", "marked", frozen(&ns, "marked", "projectsveltos.io/forceRecreate: \"\"", value)),
            file("ClusterProfile.plain", "plain", frozen(&ns, "plain", "team: web", value)),
        ]
    };
    let v1 = version("busybox:1.32", "1");
    s.sync(1, &v1, &[]).await;
    let (job_v1, marked_v1, plain_v1) =
        (live(&s, "Job", "batch").await, live(&s, "ConfigMap", "marked").await, live(&s, "ConfigMap", "plain").await);

    let v2 = version("busybox:1.33", "2");
    let planned = engine::plan(&s.client, s.desired(2, &v2, &[]), &s.inventory, &s.settings).await.expect("plan").outcome;
    let results = actions(&planned);
    assert_eq!((results["Job batch"], results["ConfigMap marked"]), (Action::WouldConfigure, Action::WouldConfigure), "{planned:#?}");
    assert!(detail(&planned, "batch").contains("would be deleted and re-created"), "{}", detail(&planned, "batch"));
    assert_eq!(results["ConfigMap plain"], Action::Failed);
    assert_eq!(uid(&live(&s, "Job", "batch").await), uid(&job_v1), "a plan writes nothing");

    let synced = s.sync_objects(s.desired(2, &v2, &[])).await;
    let results = actions(&synced);
    assert_eq!((results["Job batch"], results["ConfigMap marked"]), (Action::Recreated, Action::Recreated), "{:#?}", synced.results);
    assert!(detail(&synced, "batch").contains("immutable"), "{}", detail(&synced, "batch"));
    assert_eq!(results["ConfigMap plain"], Action::Failed, "unmarked, the refusal is surfaced");
    assert!(detail(&synced, "plain").contains("immutable"), "{}", detail(&synced, "plain"));

    let job_v2 = live(&s, "Job", "batch").await;
    assert_ne!(uid(&job_v2), uid(&job_v1));
    assert_eq!(job_v2.data["spec"]["template"]["spec"]["containers"][0]["image"], "busybox:1.33");
    let marked_v2 = live(&s, "ConfigMap", "marked").await;
    assert_ne!(uid(&marked_v2), uid(&marked_v1));
    assert_eq!(marked_v2.data["data"]["k"], "2");
    let plain_v2 = live(&s, "ConfigMap", "plain").await;
    assert_eq!((uid(&plain_v2), &plain_v2.data["data"]["k"]), (uid(&plain_v1), &serde_json::json!("1")), "left as it was");
}
