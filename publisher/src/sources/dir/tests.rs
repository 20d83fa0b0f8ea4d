use super::*;

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const CLUSTER: &str =
    "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {name: c1, namespace: fleet}\nspec: {pullMode: true}\n";
const PROFILE: &str = "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {name: web}\nspec: {tier: 5}\n";

#[test]
fn reads_files_lists_and_json_and_skips_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "clusters.yaml", &format!("{CLUSTER}---\nreplicas: 3\n"));
    write(
        tmp.path(),
        "sub/list.yml",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: fleet}}\n",
    );
    write(
        tmp.path(),
        "profile.json",
        r#"{"apiVersion":"config.projectsveltos.io/v1beta1","kind":"ClusterProfile","metadata":{"name":"p"}}"#,
    );
    write(tmp.path(), ".git/config.yaml", "not: [valid");
    write(tmp.path(), "README.md", "# not read");
    let src = DirSource::read(tmp.path()).unwrap();
    let inv = src.inventory();
    assert_eq!((inv.clusters.len(), inv.profiles.len(), inv.broken.len()), (1, 1, 0));
    let key = ObjectKey::new("v1", "ConfigMap", "fleet", "a");
    let missing = ObjectKey::new("v1", "ConfigMap", "fleet", "missing");
    let wanted = BTreeSet::from([
        Reference { key: key.clone(), api_version: "v1".into() },
        Reference { key: missing.clone(), api_version: "v1".into() },
    ]);
    let res = src.fetch(&wanted);
    assert!(res.get(&key).is_some() && res.get(&missing).is_none());
}

#[test]
fn a_reference_with_a_defaulted_namespace_finds_a_cluster_scoped_object() {
    let tmp = tempfile::tempdir().unwrap();
    let objects = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ops}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: other}\n";
    write(tmp.path(), "objects.yaml", objects);
    let src = DirSource::read(tmp.path()).unwrap();
    let (namespace, config_map) = (ObjectKey::new("v1", "Namespace", "fleet", "ops"), ObjectKey::new("v1", "ConfigMap", "fleet", "ops"));
    let wanted = BTreeSet::from([namespace.clone(), config_map.clone()].map(|key| Reference { key, api_version: "v1".into() }));
    let res = src.fetch(&wanted);
    assert_eq!(res.get(&namespace).and_then(|v| v["metadata"]["name"].as_str()), Some("ops"), "no Namespace here has a namespace");
    assert!(res.get(&config_map).is_none(), "ConfigMaps here have namespaces: one without is not in fleet");
}

#[test]
fn rejects_a_directory_that_is_not_one() {
    let tmp = tempfile::tempdir().unwrap();
    let err = DirSource::read(&tmp.path().join("nowhere")).unwrap_err();
    assert!(matches!(&err, SourceError::Io { path, .. } if path.ends_with("nowhere")), "{err}");
}

#[test]
fn a_bad_document_breaks_only_the_object_it_seems_to_be() {
    let tmp = tempfile::tempdir().unwrap();
    let bad_profile = "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata:\n  name: broken\nspec: {tier: [\n";
    write(tmp.path(), "a.yaml", &format!("{CLUSTER}---\n{bad_profile}---\n{PROFILE}"));
    let inv = DirSource::read(tmp.path()).unwrap().inventory();
    assert_eq!((inv.clusters.len(), inv.profiles.len()), (1, 1), "the good documents of the file are read");
    let [broken] = &inv.broken[..] else { panic!("{:?}", inv.broken) };
    assert!(broken.origin.ends_with("a.yaml document 2"), "{broken}");
    assert!(broken.message.starts_with("not valid YAML"), "{broken}");
    assert_eq!(broken.what, Touches::Profile { part: "ClusterProfile.broken".into(), display: "ClusterProfile/broken".into() });
}

#[test]
fn unreadable_files_and_nameless_objects_are_broken_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.yaml", &format!("{CLUSTER}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{}}\n"));
    write(tmp.path(), "b.yaml", "a: [\n");
    write(tmp.path(), "c.yaml", "apiVersion: v1\nkind: List\nitems: 3\n");
    let inv = DirSource::read(tmp.path()).unwrap().inventory();
    assert_eq!(inv.clusters.len(), 1);
    let origins: Vec<(&str, &Touches)> = inv.broken.iter().map(|b| (b.origin.rsplit('/').next().unwrap(), &b.what)).collect();
    assert_eq!(
        origins,
        [("a.yaml document 2", &Touches::Unknown), ("b.yaml document 1", &Touches::Unknown), ("c.yaml document 1", &Touches::Unknown)]
    );
}

#[test]
fn an_object_defined_twice_is_used_nowhere_and_fails_what_references_it() {
    let tmp = tempfile::tempdir().unwrap();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, namespace: defs}\n";
    write(tmp.path(), "a.yaml", &format!("{CLUSTER}---\n{cm}---\n{PROFILE}"));
    write(tmp.path(), "b.yaml", &format!("{CLUSTER}---\n{cm}"));
    let src = DirSource::read(tmp.path()).unwrap();
    let inv = src.inventory();
    assert!(inv.clusters.is_empty() && inv.profiles.len() == 1, "{:?}", inv.clusters);
    let twice: Vec<&Broken> = inv.broken.iter().filter(|b| b.message.contains("is defined twice")).collect();
    assert_eq!(twice.len(), 2);
    assert!(twice.iter().any(|b| b.what == Touches::Cluster("fleet/c1".parse().unwrap())));
    let key = ObjectKey::new("v1", "ConfigMap", "defs", "m");
    let res = src.fetch(&BTreeSet::from([Reference { key: key.clone(), api_version: "v1".into() }]));
    assert!(
        matches!(res.lookup(&key), crate::sources::Lookup::Failed(why) if why.contains("a.yaml document 2") && why.contains("b.yaml document 2"))
    );
}

#[test]
fn an_old_api_version_is_an_error_for_that_object() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.yaml", &PROFILE.replace("v1beta1", "v1alpha1"));
    let inv = DirSource::read(tmp.path()).unwrap().inventory();
    let [broken] = &inv.broken[..] else { panic!("{:?}", inv.broken) };
    assert!(broken.message.contains("apiVersion config.projectsveltos.io/v1alpha1") && broken.message.contains("v1beta1"), "{broken}");
    assert!(matches!(&broken.what, Touches::Profile { part, .. } if part == "ClusterProfile.web"));
}
