//! Keys kept in a PKCS#11 token, end to end, with SoftHSM2 as the device (`token`): the
//! online Ed25519 key and a root key are generated inside a token of the test's own and
//! never leave it; `keyring public-key` reads the online one's public key out. The real
//! publisher signs with `--key 'pkcs11:...'` and publishes to the
//! real registry; the unchanged puller verifies the bundle against a keyring holding the
//! token's public key and applies it to the managed apiserver. A second run is unchanged,
//! so the secrets derived from the token's key (a template's random value here) are stable.
//! A wrong PIN, a missing object, two objects of one label and a key that is not Ed25519
//! are each refused with exit 1, naming what is wrong and never the PIN, and publish
//! nothing. Then a keyring rotation is signed by a file root key (`rotate --partial`) and
//! completed by the token's root key (`keyring sign`); the puller, still trusting only the
//! first keyring, adopts the update carried beside the next bundle.

mod token;

use std::path::Path;
use std::process::Command;

use airlock_bundle::keyring::Role;
use airlock_bundle::{Keyring, Limits, PublicKey};
use airlock_e2e::publisher::{Keys, ManagedNamespaces, kubectl_ok, summary};
use airlock_e2e::{Run, assert_exit, publisher_bin, puller_bin};
use jiff::Timestamp;

use token::{Token, module};

const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

#[test]
fn a_key_in_a_token_signs_bundles_and_keyring_updates_the_puller_accepts() {
    let token = Token::new();
    let run = format!("p11-{:x}-{:x}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8 temp path").to_string();
    let (state_ns, app_ns) = (format!("{run}-state"), format!("{run}-app"));
    let _cleanup = ManagedNamespaces(vec![state_ns.clone(), app_ns.clone()]);
    for ns in [&state_ns, &app_ns] {
        kubectl_ok(MANAGED, &["create", "namespace", ns], b"");
    }
    let registry = format!("oci+http://{}/{run}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
    let cluster = format!("{run}/edge-1");

    // Keyring version 1: the token's online key; a root of two, the token's and a file's.
    let public = |file: &Path| PublicKey::parse(&std::fs::read_to_string(file).expect("public key")).expect("a public key");
    let file_root = Keys::new("root-2");
    // The publisher reads the token's public key as the token wrote it at generation.
    let shown = publisher(token.conf(), &["keyring", "public-key", "--key", &token.uri("ops")]);
    assert_exit(&shown, 0);
    let ops = PublicKey::parse(&shown.stdout).expect("a PEM public key");
    assert_eq!(ops, public(&token.public("ops", 1)));
    let online = Role::new("online", 1, vec![ops], &Limits::SPEC).expect("online role");
    let root = Role::new("root", 2, vec![public(&token.public("root", 2)), public(Path::new(&file_root.public))], &Limits::SPEC)
        .expect("root role");
    let keyring = Keyring::with_root(1, online, Some(root)).expect("keyring");
    std::fs::write(path("keyring.json"), keyring.to_json()).expect("keyring written");

    std::fs::create_dir(path("management")).expect("management dir");
    std::fs::write(dir.path().join("management/set.yaml"), management_set(&run, &app_ns)).expect("management set");
    let publish = |key: &str, extra: &[&str]| {
        publisher(token.conf(), &[&["publish", "--from-dir", &path("management"), "--no-cache", "--key", key], extra].concat())
    };
    let sync = || -> Run {
        Command::new(puller_bin())
            .args(["sync", "--source", &registry, "--cluster", &cluster, "--keyring", &path("keyring.json")])
            .args(["--state-namespace", &state_ns, "--kubeconfig", &airlock_e2e::service_env(MANAGED)])
            .env("AIRLOCK_LOG", "warn")
            .env_remove("KUBECONFIG")
            .output()
            .expect("airlock-puller runs")
            .into()
    };
    let live =
        |key: &str| kubectl_ok(MANAGED, &["get", "configmap", "-n", &app_ns, "settings", "-o", &format!("jsonpath={{.data.{key}}}")], b"");

    // Published with the online key in the token, applied by the unchanged puller.
    let first = publish(&token.uri("ops"), &["--to", &registry, "--keyring", &path("keyring.json"), "--log", "debug"]);
    assert_exit(&first, 0);
    assert_eq!(summary(&first.stdout).iter().map(|r| r.2.as_str()).collect::<Vec<_>>(), ["published"], "{first:?}");
    assert!(!first.stdout.contains(token::PIN) && !first.stderr.contains(token::PIN), "the PIN was shown: {first:?}");
    assert_exit(&sync(), 0);
    assert_eq!(live("color"), "blue");
    let password = live("password");
    assert_eq!(password.len(), 24, "{password:?}");
    let again = publish(&token.uri("ops"), &["--to", &registry, "--keyring", &path("keyring.json")]);
    assert_exit(&again, 0);
    assert_eq!(summary(&again.stdout)[0].2, "unchanged", "the token derives the same template entropy: {again:?}");

    // Refused: exit 1, the fault named, the PIN never shown, nothing published.
    let wrong_pin = format!("pkcs11:token={};object=ops?module-path={}&pin-value=bad-pin-9137", token::LABEL, module().display());
    let cases = [
        (wrong_pin, "PinIncorrect"),
        (token.uri("nope"), "no private key in the token matches the pkcs11 URI's 'object=nope'"),
        (token.uri("twin"), "2 objects of class private key match the pkcs11 URI's 'object=twin'"),
        (token.uri("p256"), "the key is not Ed25519"),
        (token.uri("ops").replace("token=airlock", "token=elsewhere"), "no token matches the pkcs11 URI's 'token=elsewhere'"),
    ];
    for (i, (uri, why)) in cases.iter().enumerate() {
        let layout = path(&format!("refused-{i}"));
        let refused = publish(uri, &["--to", &format!("oci-layout:{layout}")]);
        assert_exit(&refused, 1);
        assert!(refused.stderr.contains(why), "{uri}: {refused:?}");
        assert!(!refused.stderr.contains("bad-pin-9137") && !refused.stderr.contains(token::PIN), "{refused:?}");
        assert!(!Path::new(&layout).exists(), "{uri}: a refused key published to {layout}");
    }
    let as_online = publish(&token.uri("root"), &["--to", &format!("oci-layout:{}", path("root")), "--keyring", &path("keyring.json")]);
    assert_exit(&as_online, 1);
    assert!(as_online.stderr.contains("root keys sign keyring updates only"), "{as_online:?}");

    // A rotation adding an online key: the file root signs first, the token's root completes it.
    let next_online = Keys::new("ops-2");
    let rotate = publisher(
        token.conf(),
        &["keyring", "rotate", "--keyring", &path("keyring.json"), "--add", &next_online.public, "--key", &file_root.key, "--partial"]
            .into_iter()
            .chain(["--out", &path("keyring-v2.json")])
            .collect::<Vec<_>>(),
    );
    assert_exit(&rotate, 2);
    let update = path("keyring-v2.json.update");
    let signed =
        publisher(token.conf(), &["keyring", "sign", "--keyring", &path("keyring.json"), "--update", &update, "--key", &token.uri("root")]);
    assert_exit(&signed, 0);
    assert!(signed.stdout.contains("complete"), "{signed:?}");
    let chained = publish(&token.uri("ops"), &["--to", &registry, "--keyring", &path("keyring-v2.json"), "--keyring-chain", &update]);
    assert_exit(&chained, 0);
    assert_eq!(summary(&chained.stdout)[0].1, "2", "a new keyring version is a new bundle: {chained:?}");
    assert_exit(&sync(), 0);
    assert_eq!(live("password"), password, "the same key, the same random value");
}

/// The publisher with the test's token configuration.
fn publisher(conf: std::path::PathBuf, args: &[&str]) -> Run {
    Command::new(publisher_bin())
        .args(args)
        .env("SOFTHSM2_CONF", conf)
        .env("AIRLOCK_LOG", "warn")
        .env_remove("KUBECONFIG")
        .output()
        .expect("airlock-publisher runs")
        .into()
}

/// A pull-mode cluster, a profile selecting it, and a templated ConfigMap with a random
/// value: it stays the same only while the derived template entropy does.
fn management_set(run: &str, app_ns: &str) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: edge-1\n  namespace: {run}\n  \
         labels: {{run: {run}}}\nspec: {{pullMode: true}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {run}-web}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{run: {run}}}}}\n  policyRefs: [{{kind: ConfigMap, namespace: {run}, name: web}}]\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: {run}\n  annotations: {{projectsveltos.io/template: \"ok\"}}\n\
         data:\n  web.yaml: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: settings, namespace: {app_ns}}}\n\
         \x20   data: {{color: blue, password: {{{{ randAlphaNum 24 | quote }}}}}}\n"
    )
}
