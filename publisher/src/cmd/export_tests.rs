//! Unit tests of `export`'s flags, checked before any store is opened, and its summary.

use std::path::Path;

use airlock_bundle::Digest;
use airlock_bundle::SigningKey;
use airlock_store::mirror::{ExportedCluster, INDEX_FORMAT};
use clap::Parser;

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ExportArgs,
}

/// A directory with a keyring and the index of an earlier export of `full.tar`.
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let keyring = Keyring::new(1, 1, vec![SigningKey::from_seed([5; 32]).public()], &Limits::SPEC).unwrap();
    std::fs::write(dir.path().join("keyring.json"), keyring.to_json()).unwrap();
    std::fs::write(ExportIndex::path_for(&dir.path().join("full.tar")), serde_json::to_vec(&index()).unwrap()).unwrap();
    dir
}

fn index() -> ExportIndex {
    let cluster =
        ExportedCluster { cluster: "fleet/a".into(), version: 3, manifest: Digest::of(b"manifest"), bundle: Digest::of(b"bundle") };
    ExportIndex {
        format: INDEX_FORMAT.into(),
        created: "2026-01-01T00:00:00Z".into(),
        clusters: vec![cluster.clone()],
        carried: vec![cluster],
        blobs: [Digest::of(b"blob")].into(),
        total_bytes: 4096,
        new_bytes: 1024,
    }
}

fn parse(dir: &Path, args: &[&str]) -> Result<ExportArgs, clap::Error> {
    let keyring = dir.join("keyring.json");
    let base = ["export", "--from", "oci+http://127.0.0.1:5000/airlock", "--keyring", keyring.to_str().unwrap()];
    Cli::try_parse_from(base.iter().chain(args)).map(|c| c.args)
}

fn check(dir: &Path, args: &[&str]) -> anyhow::Result<Export> {
    parse(dir, args).expect("flags parse").check()
}

#[test]
fn checks_a_delta_export_of_chosen_clusters() {
    let dir = inputs();
    let since = dir.path().join("full.tar");
    let delta = dir.path().join("delta.tar");
    let to = format!("oci-archive:{}", delta.display());
    let e = check(dir.path(), &["--to", &to, "--clusters", "fleet/a,fleet/b", "--since", since.to_str().unwrap()]).unwrap();
    assert_eq!(e.to, delta);
    assert!(matches!(&e.pick, Pick::Clusters(c) if c.len() == 2 && c[1].to_string() == "fleet/b"), "{:?}", e.pick);
    assert_eq!(e.since, Some(index()));
    assert_eq!(e.keyring.version(), 1);

    let in_to_form = format!("oci-archive:{}", since.display());
    let e = check(dir.path(), &["--to", &to, "--since", &in_to_form]).unwrap();
    assert!(matches!(e.pick, Pick::All) && e.since.is_some());
}

#[test]
fn selector_needs_every_label() {
    let dir = inputs();
    let e = check(dir.path(), &["--to", "oci-archive:x.tar", "--selector", "site=a, tier=prod", "--from-dir", "."]).unwrap();
    let Pick::Selector(selector) = e.pick else { panic!("{:?}", e.pick) };
    let labels = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert!(selector.matches(&labels(&[("site", "a"), ("tier", "prod"), ("x", "y")])));
    assert!(!selector.matches(&labels(&[("site", "a")])));
}

#[test]
fn rejects_bad_flags_naming_them() {
    let dir = inputs();
    let missing = dir.path().join("nothing.tar");
    let missing_since = missing.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&["--to", "oci-layout:/tmp/x"], "--to oci-layout:/tmp/x: export writes an OCI archive"),
        (&["--to", "oci+http://127.0.0.1:5000/far"], "oci-archive:FILE"),
        (&["--to", "not-a-store"], "--to"),
        (&["--to", "oci-archive:x.tar", "--selector", "site"], "--selector \"site\": expected KEY=VALUE"),
        (&["--to", "oci-archive:x.tar", "--selector", "=a"], "expected KEY=VALUE"),
        (&["--to", "oci-archive:x.tar", "--selector", "a=1,a=2"], "\"a\" given twice"),
        (&["--to", "oci-archive:x.tar", "--selector", ","], "--selector is empty"),
        (&["--to", "oci-archive:x.tar", "--from-dir", "."], "--from-dir is only read with --selector"),
        (&["--to", "oci-archive:x.tar", "--since", missing_since], "--since"),
    ];
    for (args, want) in cases {
        let err = format!("{:#}", check(dir.path(), args).expect_err(want));
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn rejects_a_git_source_and_an_archive_onto_itself() {
    let dir = inputs();
    let mut args = parse(dir.path(), &["--to", "oci-archive:x.tar"]).unwrap();
    args.from = "git+http://127.0.0.1:8418/fleet.git".into();
    let err = format!("{:#}", args.check().unwrap_err());
    assert!(err.contains("--from git+http://127.0.0.1:8418/fleet.git") && err.contains("Git"), "{err}");
    args.from = "oci-archive:x.tar".into();
    assert!(format!("{:#}", args.check().unwrap_err()).contains("the archive --from reads"));
    args.keyring = dir.path().join("missing-keyring.json");
    args.from = "oci-layout:/srv/airlock".into();
    assert!(format!("{:#}", args.check().unwrap_err()).contains("missing-keyring.json"));
}

#[test]
fn clusters_and_selector_exclude_each_other() {
    let dir = inputs();
    let err = parse(dir.path(), &["--to", "oci-archive:x.tar", "--clusters", "fleet/a", "--selector", "a=b"]).err().unwrap();
    assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    let err = parse(dir.path(), &["--to", "oci-archive:x.tar", "--clusters", "Fleet/a"]).err().unwrap();
    assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
}

#[test]
fn summary_reports_sizes_and_the_index() {
    let mut out = Vec::new();
    write_summary(&mut out, &index(), Some(2), Path::new("/media/usb/delta.tar"), 1536).unwrap();
    let text = String::from_utf8(out).unwrap();
    let want = format!(
        "CLUSTER   VERSION   BUNDLE\n\
         fleet/a   3         {}\n\
         clusters: 1 exported, 2 unchanged since the previous export\n\
         total bytes: 4096 (4.0 KiB)\n\
         new bytes: 1024 (1.0 KiB)\n\
         ratio: 25.0% of the clusters' bytes are new\n\
         archive: /media/usb/delta.tar (1536 bytes, 1.5 KiB)\n\
         index: /media/usb/delta.tar.index.json\n",
        table::short(&Digest::of(b"bundle"))
    );
    assert_eq!(text, want);
    let mut out = Vec::new();
    write_summary(&mut out, &index(), None, Path::new("full.tar"), 1536).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("\nclusters: 1 exported\ntotal bytes"));
}
