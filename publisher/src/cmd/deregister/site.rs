//! What the site deletes once its cluster is deregistered: the reverse of the registration
//! YAML `register cluster` printed. Every object of that YAML carries the label
//! `app.kubernetes.io/part-of=airlock`, and the puller keeps its state, inventory, kept
//! report and Lease in its own namespace, so a label selection and the namespace cover it
//! all. The watched namespaces registration created for the puller's Roles may hold the
//! site's own workloads: they are named, not deleted.

use airlock_bundle::ClusterId;
use airlock_bundle::vocabulary::PULLER_NAMESPACE_ANNOTATION;
use serde_json::Value;

use crate::render::credentials::DEFAULT_PULLER_NAMESPACE;
use crate::sources::model::WATCH_NAMESPACES_ANNOTATION;

/// The label every object of the registration YAML carries.
const REGISTRATION_SELECTOR: &str = "app.kubernetes.io/part-of=airlock";

/// The puller's namespace: `flag`, else the SveltosCluster's annotation, else the default.
pub fn puller_namespace(flag: Option<&str>, object: Option<&Value>) -> String {
    let annotated = object.and_then(|o| o["metadata"]["annotations"][PULLER_NAMESPACE_ANNOTATION].as_str());
    flag.or(annotated).unwrap_or(DEFAULT_PULLER_NAMESPACE).to_string()
}

/// The shell commands for the site, as comments and lines to run.
pub fn instructions(cluster: &ClusterId, puller_namespace: &str, object: Option<&Value>) -> String {
    let mut out = format!(
        "# At the site of {cluster}: the reverse of the registration YAML. Run it once the puller\n\
         # reported its final bundle applied, or to leave what it applied in place, as it is.\n\
         kubectl delete cronjob,service,configmap,secret,serviceaccount,role,rolebinding -A -l {REGISTRATION_SELECTOR}\n\
         kubectl delete clusterrole,clusterrolebinding -l {REGISTRATION_SELECTOR}\n\
         kubectl delete namespace {puller_namespace}\n"
    );
    let watched = object.and_then(|o| o["metadata"]["annotations"][WATCH_NAMESPACES_ANNOTATION].as_str());
    if let Some(watched) = watched.filter(|w| !w.trim().is_empty()) {
        let list: Vec<&str> = watched.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        out.push_str(&format!(
            "# Registration also created the watched namespaces for the puller's Roles; delete those\n\
             # nothing else lives in:  kubectl delete namespace {}\n",
            list.join(" ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reverses_the_registration_yaml() {
        let cluster = ClusterId::new("fleet", "edge-1").unwrap();
        let object =
            json!({"metadata": {"annotations": {WATCH_NAMESPACES_ANNOTATION: "web, monitoring", PULLER_NAMESPACE_ANNOTATION: "ops"}}});
        let namespace = puller_namespace(None, Some(&object));
        assert_eq!(namespace, "ops");
        let text = instructions(&cluster, &namespace, Some(&object));
        assert!(text.contains("kubectl delete namespace ops\n"), "{text}");
        assert!(text.contains("kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=airlock\n"), "{text}");
        assert!(text.ends_with("kubectl delete namespace web monitoring\n"), "{text}");
        assert_eq!(puller_namespace(Some("x"), Some(&object)), "x");
        assert!(!instructions(&cluster, &puller_namespace(None, None), None).contains("watched"));
    }
}
