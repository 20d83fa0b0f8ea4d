//! Defaults, encodings, JSON/YAML/TOML, reflection, paths, URLs, semver, and the
//! functions that cannot run in pull mode.

use super::*;

#[test]
fn fn_defaults_all_any_fail() {
    assert_eq!(
        ok(r#"{{ all 1 "a" (list 1) }} {{ all 1 "" }} {{ all }} {{ any 0 "" "x" }} {{ any 0 false }} {{ any }}"#),
        "true false true true false false"
    );
    let err = failure("a: 1\n{{ fail \"the cluster has no region label\" }}");
    assert_eq!(err, TemplateError::Failed { at: at(2, 4), message: "the cluster has no region label".into() });
    assert!(err.to_string().ends_with("fail: the cluster has no region label"), "{err}");
}

#[test]
fn fn_encodings_round_trip() {
    assert_eq!(ok(r#"{{ b32enc "Hello" }} {{ "JBSWY3DP" | b32dec }} {{ b64enc "Hello" | b64dec }}"#), "JBSWY3DP Hello Hello");
    assert!(error_message(r#"{{ b32dec "JBSWY3D" }}"#).contains("illegal base32 data"));
    assert!(error_message(r#"{{ b64dec "/w==" }}"#).contains("not UTF-8"));
}

#[test]
fn fn_json_variants_escape_like_go() {
    let value = r#"(dict "html" "<a>&" "n" 1 "list" (list 1.5 nil true))"#;
    assert_eq!(ok(&format!("{{{{ toJson {value} }}}}")), r#"{"html":"\u003ca\u003e\u0026","list":[1.5,null,true],"n":1}"#);
    assert_eq!(ok(&format!("{{{{ mustToRawJson {value} }}}}")), r#"{"html":"<a>&","list":[1.5,null,true],"n":1}"#);
    assert_eq!(
        ok(&format!("{{{{ toPrettyJson {value} }}}}")),
        "{\n  \"html\": \"\\u003ca\\u003e\\u0026\",\n  \"list\": [\n    1.5,\n    null,\n    true\n  ],\n  \"n\": 1\n}"
    );
    assert_eq!(
        ok(
            r#"{{ $m := fromJson "{\"a\": [1, 2]}" }}{{ index $m.a 1 }} {{ mustFromJson "[1, \"x\"]" }} {{ fromJsonArray "[3, 4]" | len }}"#
        ),
        "2 [1 x] 2"
    );
    assert!(error_message(r#"{{ fromJson "[1]" }}"#).contains("expected a JSON mapping, got a sequence"));
    assert!(error_message(r#"{{ fromJsonArray "{}" }}"#).contains("expected a JSON sequence"));
    assert!(error_message(r#"{{ mustFromJson "{" }}"#).contains("invalid JSON"));
}

#[test]
fn fn_yaml_and_toml_helpers() {
    assert_eq!(ok(r#"{{ fromYamlArray "- a\n- 2" }} {{ fromYamlArray "" | len }}"#), "[a 2] 0");
    assert!(error_message(r#"{{ fromYamlArray "a: 1" }}"#).contains("expected a YAML sequence, got a mapping"));
    assert_eq!(
        ok(r#"{{ toToml (dict "name" "web" "port" 80 "tls" (dict "enabled" true)) }}"#),
        "name = \"web\"\nport = 80\n\n[tls]\nenabled = true\n"
    );
    assert_eq!(ok(r#"{{ $t := fromToml "a = 1\n[b]\nc = \"x\"" }}{{ $t.a }} {{ $t.b.c }}"#), "1 x");
    assert!(error_message(r#"{{ toToml (list 1) }}"#).contains("only a mapping"));
    assert!(error_message(r#"{{ toToml (dict "a" nil) }}"#).contains("toToml"));
    assert!(error_message(r#"{{ fromToml "a = " }}"#).contains("invalid TOML"));
}

#[test]
fn fn_reflection() {
    assert_eq!(
        ok(
            r#"{{ typeOf "hello" }}|{{ typeOf 1 }}|{{ typeOf 1.5 }}|{{ typeOf (list) }}|{{ typeOf (dict) }}|{{ typeOf nil }}|{{ typeOf true }}"#
        ),
        "string|int64|float64|[]interface {}|map[string]interface {}|<nil>|bool"
    );
    assert_eq!(
        ok(
            r#"{{ kindOf "hello" }} {{ kindOf (list 1) }} {{ kindOf (dict) }} {{ kindOf nil }} {{ kindIs "int" 123 }} {{ kindIs "slice" (list) }} {{ kindIs "map" "x" }}"#
        ),
        "string slice map invalid true true false"
    );
    assert_eq!(
        ok(r#"{{ typeIs "int64" 1 }} {{ typeIs "string" 1 }} {{ typeIsLike "*string" "x" }} {{ typeIsLike "string" "x" }}"#),
        "true false true true"
    );
    assert_eq!(
        ok(
            r#"{{ deepEqual (list 1 2 3) (list 1 2 3) }} {{ deepEqual (dict "a" (list 1)) (dict "a" (list 1)) }} {{ deepEqual 1 1.0 }} {{ deepEqual nil nil }}"#
        ),
        "true true false true"
    );
}

#[test]
fn fn_paths() {
    assert_eq!(
        ok(
            r#"{{ base "foo/bar/baz" }} {{ dir "foo/bar/baz" }} {{ clean "foo/bar/../baz" }} {{ ext "foo.bar" }} {{ isAbs "/a" }} {{ isAbs "a" }}"#
        ),
        "baz foo/bar foo/baz .bar true false"
    );
    assert_eq!(
        ok(r#"{{ osBase "/a/b/" }} {{ osDir "/a/b" }} {{ osClean "a//b/./c/.." }} {{ osExt "x.tar.gz" }} {{ osIsAbs "/" }}"#),
        "b /a a/b .gz true"
    );
}

#[test]
fn fn_urls() {
    let parsed = r#"{{ $u := urlParse "http://admin:secret@server.com:8080/api?list=false#anchor" }}"#;
    assert_eq!(
        ok(&format!(
            "{parsed}{{{{ $u.scheme }}}} {{{{ $u.host }}}} {{{{ $u.hostname }}}} {{{{ $u.path }}}} {{{{ $u.query }}}} {{{{ $u.fragment }}}} {{{{ $u.userinfo }}}} [{{{{ $u.opaque }}}}]"
        )),
        "http server.com:8080 server.com /api list=false anchor admin:secret []"
    );
    assert_eq!(
        ok(r#"{{ urlJoin (dict "fragment" "fragment" "host" "host:80" "path" "/path" "query" "query" "scheme" "http") }}"#),
        "http://host:80/path?query#fragment"
    );
    assert_eq!(ok(r#"{{ urlJoin (dict "scheme" "https" "host" "h" "path" "a b?" "userinfo" "u:p@ss") }}"#), "https://u:p%40ss@h/a%20b%3F");
    assert_eq!(
        ok(r#"{{ (urlParse "mailto:x@y.z").opaque }} {{ (urlParse "/a%20b").path }} {{ (urlParse "http://[::1]:80/").hostname }}"#),
        "x@y.z /a b ::1"
    );
    assert_eq!(ok(r#"{{ urlquery "a b&c" }}"#), "a+b%26c");
    assert!(error_message(r#"{{ urlParse "http://h:port/" }}"#).contains("invalid port"));
    assert!(error_message(r#"{{ urlParse "%zz" }}"#).contains("invalid URL escape"));
    assert!(error_message(r#"{{ urlJoin (dict "host" 1) }}"#).contains("must be of type string"));
}

#[test]
fn fn_semver() {
    assert_eq!(
        ok(
            r#"{{ semverCompare "^1.2.0" "1.2.3" }} {{ semverCompare "~1.2.0" "1.3.0" }} {{ semverCompare ">=1.0.0, <2.0.0 || 3.x" "3.4.5" }}"#
        ),
        "true false true"
    );
    let v = r#"{{ $v := semver "1.2.3-alpha.1+123" }}"#;
    assert_eq!(
        ok(&format!(
            "{v}{{{{ $v.Major }}}}.{{{{ $v.Minor }}}}.{{{{ $v.Patch }}}} {{{{ $v.Prerelease }}}} {{{{ $v.Metadata }}}} {{{{ $v.Original }}}}"
        )),
        "1.2.3 alpha.1 123 1.2.3-alpha.1+123"
    );
    assert_eq!(ok(r#"{{ (semver "v2").Major }} {{ semverCompare ">=1.19" "1.28.3" }}"#), "2 true");
    assert!(error_message(r#"{{ semver "1.2.3.4" }}"#).contains("Invalid Semantic Version"));
    assert!(error_message(r#"{{ semverCompare ">> 1" "1.0.0" }}"#).contains("improper constraint"));
}

#[test]
fn rejects_get_host_by_name_without_network_io() {
    let err = failure("a: 1\nip: {{ getHostByName \"example.com\" }}");
    assert_eq!(err, TemplateError::Unavailable { at: at(2, 8), function: "getHostByName".into(), reason: Unavailable::PullMode });
    assert!(err.to_string().contains("not available in pull mode"), "{err}");
    assert_names_source(&err, 2);
}

#[test]
fn rejects_env_functions_sveltos_leaves_out() {
    for name in ["env", "expandenv"] {
        assert!(matches!(failure(&format!("{{{{ {name} \"HOME\" }}}}")), TemplateError::UndefinedFunction { name: n, .. } if n == name));
    }
}
