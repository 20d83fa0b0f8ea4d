//! Confidential bundles: what a cluster with an age recipient gets sealed, what it shares
//! with a cluster that gets everything in clear, and the annotations that ask for it.

use airlock_bundle::age::{self, Identity, Recipient};

use super::sveltos::stored;
use super::*;

/// A cluster in region eu whose bundles are sealed to the identity of `seed`.
fn sealed_cluster(name: &str, seed: u8) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: {name}, namespace: fleet, labels: {{region: eu}}, annotations: {{airlock.dev/age-recipient: {}}}}}\n\
         spec: {{pullMode: true}}\n",
        identity(seed).recipient()
    )
}

fn identity(seed: u8) -> Identity {
    Identity::from_secret([seed; 32])
}

const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\nstringData: {password: hunter2}\n";
const SETTINGS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {color: blue}\n";
const PLAIN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: tools}\ndata: {x: '1'}\n";

/// `app` (a ConfigMap and a Secret), `plain` (a ConfigMap), both in region eu, and the
/// sealed cluster eu-2 beside the clear eu-1.
fn fleet() -> String {
    format!(
        "{}---\n{}---\n{}---\n{}---\n{}",
        sealed_cluster("eu-2", 1),
        profile("app", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: app}"),
        config_map("app", "defs", &format!("{SETTINGS}---\n{SECRET}")),
        profile("plain", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: plain}"),
        config_map("plain", "defs", PLAIN),
    )
}

fn sealing(res: &Resources, extra: Vec<Recipient>) -> Renderer<'_> {
    renderer(res).with_sealing(Sealing::new(std::sync::Arc::new(airlock_bundle::mac::Secret::new(&[9; 32])), extra))
}

fn render_with(r: &Renderer<'_>, w: &(Inventory, Resources), cluster: &str) -> Rendered {
    render_stored(r, w, cluster, None).unwrap()
}

fn paths(r: &Rendered) -> Vec<&str> {
    r.bundle.files().map(|(p, _)| p).collect()
}

fn bytes<'a>(r: &'a Rendered, path: &str) -> &'a [u8] {
    r.bundle.files().find(|(p, _)| *p == path).unwrap_or_else(|| panic!("no {path} in {:?}", paths(r))).1
}

const SEALED_DB: &str = "ClusterProfile.app/Secret.apps.db.yaml.age";

#[test]
fn a_cluster_with_a_recipient_gets_its_secrets_sealed_and_shares_the_rest() {
    let w = world_allowing_clear(&fleet());
    let renderer = sealing(&w.1, Vec::new());
    let (clear, sealed) = (render_with(&renderer, &w, "fleet/eu-1"), render_with(&renderer, &w, "fleet/eu-2"));

    assert_eq!(clear.recipients, None);
    assert!(paths(&clear).contains(&"ClusterProfile.app/Secret.apps.db.yaml"));
    assert!(file(&clear, "ClusterProfile.app/Secret.apps.db.yaml").contains("hunter2"), "no recipient, allowed: in clear");

    assert_eq!(
        paths(&sealed),
        [
            "ClusterProfile.app/ConfigMap.apps.settings.yaml",
            "ClusterProfile.app/Namespace.cluster.apps.yaml",
            SEALED_DB,
            "ClusterProfile.plain/ConfigMap.tools.plain.yaml",
            "ClusterProfile.plain/Namespace.cluster.tools.yaml",
        ]
    );
    assert_eq!(sealed.recipients, Some(vec![identity(1).recipient().to_string()]));
    let ciphertext = bytes(&sealed, SEALED_DB);
    assert!(ciphertext.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----\n"));
    assert!(!ciphertext.windows(7).any(|w| w == b"hunter2"));
    let opened = age::decrypt(ciphertext, &[identity(1)], 1 << 20).unwrap();
    assert!(opened.ends_with(bytes(&clear, "ClusterProfile.app/Secret.apps.db.yaml")), "the plaintext is the clear file, salted");

    let settings = "ClusterProfile.app/ConfigMap.apps.settings.yaml";
    assert_eq!(bytes(&sealed, settings), bytes(&clear, settings), "a ConfigMap stays in clear");
    let plain = "ClusterProfile.plain/ConfigMap.tools.plain.yaml";
    assert_eq!(bytes(&sealed, plain).as_ptr(), bytes(&clear, plain).as_ptr(), "a part with nothing to seal stays shared");

    let (statement, _) = stored(&sealed, 1);
    assert_eq!(statement.predicate.settings.recipients, sealed.recipients);
    let entry = statement.predicate.files.iter().find(|f| f.path == SEALED_DB).unwrap();
    let plaintext = entry.plaintext.as_ref().expect("the statement signs what it decrypts to");
    assert_eq!((plaintext.size, plaintext.sha256.clone()), (opened.len() as u64, airlock_bundle::Digest::of(&opened).hex()));
    assert!(statement.predicate.files.iter().filter(|f| f.path != SEALED_DB).all(|f| f.plaintext.is_none()));
}

#[test]
fn sealing_is_deterministic_so_an_unchanged_cluster_renders_the_same_bundle() {
    let w = world(&fleet());
    let digest = |w: &(Inventory, Resources)| render_with(&sealing(&w.1, Vec::new()), w, "fleet/eu-2").bundle.digest();
    assert_eq!(digest(&w), digest(&w), "a new run, a new renderer: the same bytes");
    let changed = world(&fleet().replace("hunter2", "hunter3"));
    assert_ne!(digest(&changed), digest(&w));
    let (before, after) =
        (render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-2"), render_with(&sealing(&changed.1, Vec::new()), &changed, "fleet/eu-2"));
    let plain = |r: &Rendered| r.bundle.part("ClusterProfile.plain").unwrap().clone();
    assert_eq!(plain(&before), plain(&after), "only the part holding the Secret changed");
    assert_ne!(before.bundle.part("ClusterProfile.app"), after.bundle.part("ClusterProfile.app"));
}

#[test]
fn break_glass_recipients_come_after_the_clusters_own() {
    let w = world(&fleet());
    let renderer = sealing(&w.1, vec![identity(2).recipient(), identity(1).recipient()]);
    let sealed = render_with(&renderer, &w, "fleet/eu-2");
    let want = [identity(1).recipient(), identity(2).recipient()].map(|r| r.to_string()).to_vec();
    assert_eq!(sealed.recipients, Some(want), "the cluster's own first, and never twice");
    let opened = age::decrypt(bytes(&sealed, SEALED_DB), &[identity(2)], 1 << 20).unwrap();
    assert!(String::from_utf8(opened).unwrap().contains("hunter2"), "the break-glass key opens it");
    let clear = render_with(&renderer, &w, "fleet/eu-1");
    assert_eq!(clear.recipients, None, "a cluster without a recipient of its own gets nothing sealed");
}

/// The source of `plain` with the annotation airlock.dev/confidential: `value`.
fn marked_source(value: &str) -> String {
    config_map("plain", "defs", PLAIN).replace(
        "metadata: {name: plain, namespace: defs}",
        &format!("metadata: {{name: plain, namespace: defs, annotations: {{airlock.dev/confidential: {value}}}}}"),
    )
}

#[test]
fn a_source_marked_confidential_is_sealed_whatever_its_kind() {
    let marked = |value: &str| world(&fleet().replace(&config_map("plain", "defs", PLAIN), &marked_source(value)));
    let w = marked("'true'");
    let renderer = sealing(&w.1, Vec::new());
    let sealed = render_with(&renderer, &w, "fleet/eu-2");
    assert!(paths(&sealed).contains(&"ClusterProfile.plain/ConfigMap.tools.plain.yaml.age"), "{:?}", paths(&sealed));
    let refused = render_with(&renderer, &w, "fleet/eu-1");
    let message = &failure(&refused, "ClusterProfile.plain").expect("no recipient: refused").message;
    assert!(message.starts_with("fleet/eu-1: ConfigMap tools/plain (ClusterProfile/plain: "), "{message}");
    assert!(!paths(&refused).iter().any(|p| p.contains("tools.plain")), "{:?}", paths(&refused));
    let allowed = world_allowing_clear(&fleet().replace(&config_map("plain", "defs", PLAIN), &marked_source("'true'")));
    let clear = render_with(&sealing(&allowed.1, Vec::new()), &allowed, "fleet/eu-1");
    assert!(paths(&clear).contains(&"ClusterProfile.plain/ConfigMap.tools.plain.yaml"), "allowed: in clear");

    for bad in ["'yes'", "'True'", "true"] {
        let w = marked(bad);
        let r = render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-2");
        let message = &failure(&r, "ClusterProfile.plain").unwrap_or_else(|| panic!("{bad} refused")).message;
        assert!(message.starts_with("ConfigMap defs/plain: annotation airlock.dev/confidential: "), "{message}");
    }
}

#[test]
fn plaintext_secrets_allowed_travel_in_the_bundle() {
    let allowed = fleet().replace(
        "annotations: {airlock.dev/age-recipient:",
        "annotations: {airlock.dev/plaintext-secrets: allow, airlock.dev/age-recipient:",
    );
    let w = world(&allowed);
    let r = render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-2");
    assert!(
        r.allow_plaintext_secrets && paths(&r).contains(&SEALED_DB),
        "allowed, yet sealed: the publisher never sends them in clear by choice"
    );
    assert!(stored(&r, 1).0.predicate.settings.allow_plaintext_secrets);
    assert!(!render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-1").allow_plaintext_secrets);
}

#[test]
fn a_confirmed_mass_prune_travels_in_the_bundle() {
    let confirmed = fleet().replace(
        "annotations: {airlock.dev/age-recipient:",
        "annotations: {airlock.dev/allow-mass-prune: 'true', airlock.dev/age-recipient:",
    );
    let w = world(&confirmed);
    let r = render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-2");
    assert!(r.allow_mass_prune && stored(&r, 1).0.predicate.settings.allow_mass_prune);
    assert!(!render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-1").allow_mass_prune);
}

#[test]
fn the_cluster_scoped_allow_list_travels_in_the_bundle_sorted() {
    let listed = fleet().replace(
        "annotations: {airlock.dev/age-recipient:",
        "annotations: {airlock.dev/cluster-scoped: 'PriorityClass.scheduling.k8s.io/edge-high, Namespace/extra', airlock.dev/age-recipient:",
    );
    let w = world(&listed);
    let r = render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-2");
    let signed: Vec<String> = stored(&r, 1).0.predicate.settings.cluster_scoped.iter().map(ToString::to_string).collect();
    assert_eq!(signed, ["Namespace/extra", "PriorityClass.scheduling.k8s.io/edge-high"]);
    assert!(render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-1").cluster_scoped.is_empty(), "absent: none beyond the list");
}

#[test]
fn bad_cluster_annotations_break_the_cluster_naming_it_and_the_annotation() {
    for (annotations, field) in [
        ("{airlock.dev/age-recipient: age1notarecipient}", "metadata.annotations[airlock.dev/age-recipient]"),
        ("{airlock.dev/age-recipient: AGE-SECRET-KEY-1QQQQ}", "metadata.annotations[airlock.dev/age-recipient]"),
        ("{airlock.dev/plaintext-secrets: 'yes'}", "metadata.annotations[airlock.dev/plaintext-secrets]"),
        ("{airlock.dev/allow-mass-prune: 'yes'}", "metadata.annotations[airlock.dev/allow-mass-prune]"),
        ("{airlock.dev/cluster-scoped: 'clusterrole/x'}", "metadata.annotations[airlock.dev/cluster-scoped]"),
    ] {
        let text = format!(
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
             metadata: {{name: eu-9, namespace: fleet, annotations: {annotations}}}\nspec: {{pullMode: true}}\n"
        );
        let docs = yaml::parse_documents(&text).unwrap();
        let inv = Inventory::from_objects(docs.iter().map(|d| ("c.yaml".to_string(), d)));
        assert!(inv.clusters.is_empty(), "{annotations}");
        let broken = inv.broken[0].to_string();
        assert_eq!(inv.broken[0].what, crate::sources::Touches::Cluster("fleet/eu-9".parse().unwrap()), "fails that cluster");
        assert!(broken.contains(&format!("SveltosCluster fleet/eu-9: field {field}: ")), "{broken}");
        assert!(!broken.contains("QQQQ"), "a key pasted there is not echoed: {broken}");
    }
}

#[test]
fn a_held_part_keeps_its_sealed_files_byte_for_byte() {
    let w = world(&fleet());
    let renderer = sealing(&w.1, Vec::new());
    let first = render_with(&renderer, &w, "fleet/eu-2");
    let (statement, kept) = stored(&first, 4);
    // The source of `app` is gone: the profile fails and its part keeps what the store has.
    let broken = world(&fleet().replace("metadata: {name: app, namespace: defs}", "metadata: {name: gone, namespace: defs}"));
    let renderer = sealing(&broken.1, Vec::new());
    let held = render_stored(&renderer, &broken, "fleet/eu-2", Some((&statement, &kept))).unwrap();
    assert_eq!(failure(&held, "ClusterProfile.app").unwrap().kept_from, Some(4));
    assert_eq!(bytes(&held, SEALED_DB), bytes(&first, SEALED_DB));
    assert_eq!(held.recipients, first.recipients);

    // Taken off encryption meanwhile: the kept files stay sealed, to the recipients the
    // store's statement lists, since the publisher cannot open them.
    let off = broken_without_recipient();
    let held = render_stored(&sealing(&off.1, Vec::new()), &off, "fleet/eu-2", Some((&statement, &kept))).unwrap();
    assert_eq!(bytes(&held, SEALED_DB), bytes(&first, SEALED_DB));
    assert_eq!(held.recipients, first.recipients);
}

fn broken_without_recipient() -> (Inventory, Resources) {
    let text = fleet().replace("metadata: {name: app, namespace: defs}", "metadata: {name: gone, namespace: defs}");
    let start = text.find(", annotations: {airlock.dev/age-recipient:").unwrap();
    let end = start + text[start..].find("}}").unwrap() + 1;
    world(&format!("{}{}", &text[..start], &text[end..]))
}

#[test]
fn a_cluster_without_a_recipient_gets_no_secret_in_clear_unless_it_allows_them() {
    let w = world(&fleet());
    let r = render_with(&sealing(&w.1, Vec::new()), &w, "fleet/eu-1");
    let message = &failure(&r, "ClusterProfile.app").expect("the profile carrying the Secret fails").message;
    for part in [
        "fleet/eu-1: Secret apps/db (ClusterProfile/app: ",
        "would be stored in clear: the cluster has no age recipient",
        "airlock-publisher register cluster",
        "airlock.dev/plaintext-secrets: allow",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert_eq!(r.failures.iter().map(|f| f.part.as_str()).collect::<Vec<_>>(), ["ClusterProfile.app"]);
    assert!(paths(&r).contains(&"ClusterProfile.plain/ConfigMap.tools.plain.yaml"), "the other profiles still publish");
    assert!(!paths(&r).iter().any(|p| p.starts_with("ClusterProfile.app/")), "nothing of the refused part: {:?}", paths(&r));
    assert!(!r.bundle.files().any(|(_, b)| b.windows(7).any(|w| w == b"hunter2")));
    let (statement, _) = stored(&r, 1);
    assert!(!statement.predicate.settings.allow_plaintext_secrets);
    assert!(!serde_json::to_string(&statement).unwrap().contains("hunter2"), "nor in the failure it signs");

    let allowed = world_allowing_clear(&fleet());
    let r = render_with(&sealing(&allowed.1, Vec::new()), &allowed, "fleet/eu-1");
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(file(&r, "ClusterProfile.app/Secret.apps.db.yaml").contains("hunter2"));
    assert!(stored(&r, 1).0.predicate.settings.allow_plaintext_secrets, "the choice is signed, for the puller to check");
}

#[test]
fn a_part_kept_in_clear_with_a_secret_fails_the_cluster_once_clear_is_no_longer_allowed() {
    let allowed = world_allowing_clear(&fleet());
    let first = render_with(&sealing(&allowed.1, Vec::new()), &allowed, "fleet/eu-1");
    let (statement, kept) = stored(&first, 4);
    // The source of `app` is gone, so its part is kept from the store, and the allowance
    // was withdrawn meanwhile: republishing the kept Secret in clear is refused.
    let broken = world(&fleet().replace("metadata: {name: app, namespace: defs}", "metadata: {name: gone, namespace: defs}"));
    let err = render_stored(&sealing(&broken.1, Vec::new()), &broken, "fleet/eu-1", Some((&statement, &kept))).unwrap_err();
    assert!(matches!(&err, RenderError::Clear { cluster, .. } if cluster == "fleet/eu-1"), "{err}");
    assert!(err.to_string().contains("the Secret in ClusterProfile.app/Secret.apps.db.yaml"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}
