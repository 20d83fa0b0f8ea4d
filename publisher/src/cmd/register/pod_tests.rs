//! Unit tests of where the registration's pod runs and what it mounts: the node's network,
//! a store on the node's disk, a Git store's cache.

use serde_json::{Value, json};

use super::manifests::registration_yaml;
use super::settings::tests::{flags, keyring_file};
use super::tests::{get, render};

#[test]
fn host_network_puts_the_pod_on_the_nodes_network_and_resolver_without_a_port() {
    let pod = |args: &[&str]| {
        let (_, docs) = render(args);
        get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"].clone()
    };
    let plain = pod(&[]);
    assert!(plain.get("hostNetwork").is_none() && plain.get("dnsPolicy").is_none());
    assert_eq!(plain["containers"][0]["ports"][0]["containerPort"], 9090);
    let host = pod(&["--host-network"]);
    assert_eq!((&host["hostNetwork"], &host["dnsPolicy"]), (&json!(true), &json!("None")));
    assert_eq!(host["dnsConfig"], json!({"nameservers": ["127.0.0.1"]}));
    assert!(host["containers"][0].get("ports").is_none(), "a host port would keep two pullers off one node");
}

#[test]
fn mount_host_path_mounts_a_local_source_at_its_own_path() {
    let (_dir, keyring) = keyring_file();
    let docs = |source: &str, extra: &[&str]| {
        let mut args = vec!["--source", source];
        args.extend(extra);
        let reg = flags(&keyring, &args).check()?;
        Ok::<_, anyhow::Error>(serde_saphyr::from_multiple::<Value>(&registration_yaml(&reg).unwrap()).unwrap())
    };
    let pod = |docs: &[Value]| {
        get(docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"].clone()
    };
    let layout = pod(&docs("oci-layout:/srv/airlock/bundles", &["--mount-host-path"]).unwrap());
    let volume = layout["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "store").expect("a store volume").clone();
    assert_eq!(volume["hostPath"], json!({"path": "/srv/airlock/bundles", "type": "Directory"}));
    let mount = layout["containers"][0]["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "store").unwrap().clone();
    assert_eq!(mount, json!({"name": "store", "mountPath": "/srv/airlock/bundles", "readOnly": false}), "reports are written there");
    let archive = pod(&docs("oci-archive:/media/update.tar", &["--mount-host-path"]).unwrap());
    let mount = archive["containers"][0]["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "store").unwrap().clone();
    assert_eq!(mount["readOnly"], true);
    let config = |docs: &[Value]| -> Value {
        serde_json::from_str(get(docs, "ConfigMap", Some("airlock-system"), "airlock-puller")["data"]["config.json"].as_str().unwrap())
            .unwrap()
    };
    assert_eq!(config(&docs("oci-archive:/media/update.tar", &[]).unwrap())["pushReports"], false, "an archive keeps no reports");
    let unmounted = pod(&docs("oci-layout:/srv/airlock/bundles", &[]).unwrap());
    assert!(!unmounted["volumes"].as_array().unwrap().iter().any(|v| v["name"] == "store"));
    let err = docs("oci+http://127.0.0.1:5000/airlock", &["--mount-host-path"]).unwrap_err().to_string();
    assert!(err.contains("needs a local --source"), "{err}");
}

#[test]
fn a_git_store_gets_a_cache_outside_the_read_only_root() {
    let (_, docs) = render(&["--source", "git+http://127.0.0.1:8418/fleet.git"]);
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let env = pod["containers"][0]["env"].as_array().unwrap();
    assert!(env.contains(&json!({"name": "AIRLOCK_CACHE", "value": "/var/lib/airlock/cache"})), "{env:?}");
    assert!(pod["volumes"].as_array().unwrap().iter().any(|v| v["name"] == "git-cache" && v["emptyDir"]["sizeLimit"] == "1Gi"));
}

#[test]
fn the_lease_duration_goes_into_the_settings_only_when_given() {
    let config = |args: &[&str]| -> Value {
        let (_, docs) = render(args);
        serde_json::from_str(get(&docs, "ConfigMap", Some("airlock-system"), "airlock-puller")["data"]["config.json"].as_str().unwrap())
            .unwrap()
    };
    assert!(config(&[]).get("leaseDuration").is_none());
    assert_eq!(config(&["--lease-duration", "30s"])["leaseDuration"], "30s");
}
