use super::*;

fn mirrors(pairs: &[&str]) -> Mirrors {
    Mirrors::parse(pairs.iter().enumerate().map(|(i, p)| (format!("--mirror number {}", i + 1), *p))).expect("valid mirrors")
}

impl Mirrors {
    fn rewrite_url<'u>(&self, url: &'u str) -> Cow<'u, str> {
        self.rewrite(url).url
    }
}

fn refused(pair: &str) -> MirrorError {
    Mirrors::parse([("--mirror number 1".to_string(), pair)]).expect_err("refused")
}

#[test]
fn rewrites_a_helm_repository_and_what_is_below_it() {
    let m = mirrors(&["https://kyverno.github.io/kyverno/=http://127.0.0.1:8879/"]);
    assert_eq!(m.rewrite_url("https://kyverno.github.io/kyverno"), "http://127.0.0.1:8879");
    assert_eq!(m.rewrite_url("https://kyverno.github.io/kyverno/"), "http://127.0.0.1:8879/");
    assert_eq!(m.rewrite_url("https://kyverno.github.io/kyverno/kyverno-3.3.3.tgz"), "http://127.0.0.1:8879/kyverno-3.3.3.tgz");
    assert_eq!(m.rewrite_url("https://kyverno.github.io/kyverno-other"), "https://kyverno.github.io/kyverno-other", "not a path boundary");
    assert_eq!(m.rewrite_url("https://kyverno.github.io"), "https://kyverno.github.io");
    assert!(matches!(m.rewrite_url("https://charts.example/x"), Cow::Borrowed(_)), "an unmirrored URL is not copied");
}

#[test]
fn the_longest_from_wins_whatever_the_order() {
    let m = mirrors(&["https://charts.example=https://mirror.local/all", "https://charts.example/stable=http://127.0.0.1:1/stable"]);
    assert_eq!(m.rewrite_url("https://charts.example/stable"), "http://127.0.0.1:1/stable");
    assert_eq!(m.rewrite_url("https://charts.example/incubator"), "https://mirror.local/all/incubator");
    let reversed = mirrors(&["https://charts.example/stable=http://127.0.0.1:1/stable", "https://charts.example=https://mirror.local/all"]);
    assert_eq!(reversed, m, "the table does not depend on the order given");
}

#[test]
fn a_host_is_matched_whole() {
    let m = mirrors(&["oci://ghcr.io=oci://127.0.0.1:5000/ghcr"]);
    assert_eq!(m.rewrite_url("oci://ghcr.io/org/charts"), "oci://127.0.0.1:5000/ghcr/org/charts");
    assert_eq!(m.rewrite_url("oci://ghcr.io.evil.example/x"), "oci://ghcr.io.evil.example/x");
    assert_eq!(m.rewrite_url("oci://ghcr.io:443/x"), "oci://ghcr.io:443/x", "another port is another host");
}

#[test]
fn an_oci_reference_keeps_its_tag_or_digest() {
    let m = mirrors(&["oci://registry.example/fleet/base=oci://127.0.0.1:5000/mirror/base"]);
    assert_eq!(m.rewrite_url("oci://registry.example/fleet/base:v3"), "oci://127.0.0.1:5000/mirror/base:v3");
    assert_eq!(m.rewrite_url("oci://registry.example/fleet/base@sha256:ab"), "oci://127.0.0.1:5000/mirror/base@sha256:ab");
    assert_eq!(m.rewrite_url("oci://registry.example/fleet/baseline:v3"), "oci://registry.example/fleet/baseline:v3");
}

#[test]
fn a_plain_http_registry_is_an_oci_mirror_spoken_to_without_tls() {
    let m = mirrors(&["oci://ghcr.io=oci+http://127.0.0.1:5000/ghcr", "oci://quay.io=oci://127.0.0.1:5001"]);
    assert_eq!(m.rewrite("oci://ghcr.io/org/app:v1"), Target { url: "oci://127.0.0.1:5000/ghcr/org/app:v1".into(), plain_http: true });
    assert_eq!(m.rewrite("oci://quay.io/org/app:v1"), Target { url: "oci://127.0.0.1:5001/org/app:v1".into(), plain_http: false });
    assert!(!m.rewrite("oci://docker.io/org/app:v1").plain_http, "an unmirrored URL keeps what the profile says");
    assert!(matches!(refused("oci+http://ghcr.io=oci://127.0.0.1:1"), MirrorError::UnknownScheme { side: "FROM", .. }));
    assert!(matches!(refused("https://a.example=oci+http://127.0.0.1:1"), MirrorError::KindMismatch { .. }));
}

#[test]
fn a_login_in_the_url_stays_with_the_rewritten_url() {
    let m = mirrors(&["https://charts.example=http://127.0.0.1:8080/charts"]);
    assert_eq!(m.rewrite_url("https://ops:pw@charts.example/stable?token=t"), "http://ops:pw@127.0.0.1:8080/charts/stable?token=t");
}

#[test]
fn git_urls_are_mirrored_to_git() {
    let m = mirrors(&["git://git.example/fleet=git://127.0.0.1:9418/fleet", "HTTPS://github.com/org/=https://git.local/org"]);
    assert_eq!(m.rewrite_url("git://git.example/fleet/apps.git"), "git://127.0.0.1:9418/fleet/apps.git");
    assert_eq!(m.rewrite_url("https://github.com/org/apps.git"), "https://git.local/org/apps.git", "the scheme is read case-blind");
}

#[test]
fn reads_a_mirror_file_with_comments_and_names_its_lines() {
    let text = "# the enclave's copies\n\nhttps://kyverno.github.io/kyverno/ = http://127.0.0.1:8879/\n  # indented comment\noci://ghcr.io=oci://127.0.0.1:5000\n";
    let lines = file_lines("mirrors.txt", text);
    assert_eq!(
        lines.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        ["--mirror-file mirrors.txt line 3", "--mirror-file mirrors.txt line 5"]
    );
    let m = Mirrors::parse(lines).expect("valid");
    assert_eq!(m.rewrite_url("https://kyverno.github.io/kyverno"), "http://127.0.0.1:8879");
    let bad = Mirrors::parse(file_lines("mirrors.txt", "oci://ghcr.io=oci://127.0.0.1:5000\nnot a pair\n")).unwrap_err();
    assert_eq!(bad, MirrorError::NotAPair { place: "--mirror-file mirrors.txt line 2".into() });
    assert!(bad.to_string().starts_with("--mirror-file mirrors.txt line 2: "), "{bad}");
}

#[test]
fn a_from_whose_path_holds_an_equals_sign_still_reads() {
    let m = mirrors(&["https://charts.example/a=b=http://127.0.0.1:1/ab"]);
    assert_eq!(m.rewrite_url("https://charts.example/a=b/index.yaml"), "http://127.0.0.1:1/ab/index.yaml");
}

#[test]
fn rejects_what_is_not_a_pair() {
    for text in ["", "https://a.example", "https://a.example=", "=https://b.example", "https://a.example=b.example"] {
        assert!(matches!(refused(text), MirrorError::NotAPair { .. }), "{text:?}");
    }
}

#[test]
fn rejects_a_url_that_is_not_absolute() {
    assert!(matches!(refused("https://=http://127.0.0.1:1"), MirrorError::NotAbsolute { side: "FROM", .. }));
    assert!(matches!(refused("https://a.example=http:///x"), MirrorError::NotAbsolute { side: "TO", .. }));
    assert!(matches!(refused("https://a example=http://b"), MirrorError::NotAbsolute { side: "FROM", .. }));
}

#[test]
fn rejects_an_unknown_scheme() {
    assert_eq!(
        refused("ftp://a.example=http://b.example"),
        MirrorError::UnknownScheme { place: "--mirror number 1".into(), side: "FROM", scheme: "ftp".into() }
    );
    assert!(matches!(refused("https://a.example=s3://b"), MirrorError::UnknownScheme { side: "TO", .. }));
    assert!(matches!(refused("https://a.example=file:///srv/a"), MirrorError::UnknownScheme { side: "TO", .. }));
}

#[test]
fn rejects_mirrors_of_another_kind() {
    for pair in ["oci://ghcr.io=https://127.0.0.1:1", "https://a.example=oci://127.0.0.1:5000", "git://a.example/r=https://b.example/r"] {
        assert!(matches!(refused(pair), MirrorError::KindMismatch { .. }), "{pair}");
    }
    let err = refused("oci://ghcr.io=http://127.0.0.1:1").to_string();
    assert!(err.contains("an oci:// FROM needs an oci:// or oci+http:// TO"), "{err}");
}

#[test]
fn rejects_credentials_without_showing_them() {
    let err = refused("https://ops:s3cret@charts.example=http://127.0.0.1:1");
    assert_eq!(err, MirrorError::Credentials { place: "--mirror number 1".into(), side: "FROM" });
    assert!(!err.to_string().contains("s3cret"));
    assert_eq!(
        refused("https://a.example=http://u:p@127.0.0.1:1"),
        MirrorError::Credentials { place: "--mirror number 1".into(), side: "TO" }
    );
}

#[test]
fn rejects_a_query_or_fragment() {
    let err = refused("https://a.example/x?token=t0k=http://127.0.0.1:1");
    assert!(matches!(&err, MirrorError::QueryOrFragment { side: "FROM", .. }), "{err}");
    assert!(!err.to_string().contains("t0k"), "{err}");
    assert!(matches!(refused("https://a.example=http://127.0.0.1:1/#x"), MirrorError::QueryOrFragment { side: "TO", .. }));
}

#[test]
fn rejects_a_from_given_twice() {
    let err = Mirrors::parse([
        ("--mirror number 1".to_string(), "https://a.example/=http://127.0.0.1:1"),
        ("--mirror-file m line 4".to_string(), "https://a.example=http://127.0.0.1:2"),
    ])
    .unwrap_err();
    assert_eq!(
        err,
        MirrorError::Duplicate {
            place: "--mirror-file m line 4".into(),
            from: "https://a.example".into(),
            first: "--mirror number 1".into()
        }
    );
}

#[test]
fn travels_to_the_worker_unchanged() {
    let m = mirrors(&["oci://ghcr.io=oci://127.0.0.1:5000", "https://a.example=http://127.0.0.1:1"]);
    let back: Mirrors = serde_json::from_slice(&serde_json::to_vec(&m).expect("serialises")).expect("reads back");
    assert_eq!(back, m);
}
