//! Rendering tests: data access, control flow, every error variant naming the profile,
//! resource, key and line; the functions' tests are in `tests/`, by group.

mod collections;
mod crypto;
mod dates;
mod numbers;
mod random;
mod resources;
mod strings;
mod values;

use serde_json::json;

use super::*;

const SOURCE: TemplateSource<'static> = TemplateSource { profile: "web", resource: "ConfigMap default/web-config", key: "deploy.yaml" };

fn data() -> serde_json::Value {
    json!({
        "Cluster": {
            "apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "SveltosCluster",
            "metadata": {
                "name": "edge-1",
                "namespace": "fleet",
                "labels": {"region": "eu-west", "tier": "gold", "env": "prod"}
            },
            "spec": {"pullMode": true, "replicas": 3, "ratio": 1.5, "zones": ["a", "b", "c"], "empty": [], "note": ""}
        },
        "MgmtResources": {
            "cfg": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"replicas": "4", "image": "nginx:1.27"}}
        }
    })
}

fn ok(text: &str) -> String {
    render(&SOURCE, text, &data()).unwrap_or_else(|err| panic!("{text:?} failed: {err}"))
}

fn failure(text: &str) -> TemplateError {
    render(&SOURCE, text, &data()).expect_err("the template should fail")
}

/// The message of the execution error `text` fails with.
fn error_message(text: &str) -> String {
    match failure(text) {
        TemplateError::Execution { message, .. } => message,
        other => panic!("{text:?} failed with {other:?}"),
    }
}

/// An environment with entropy from a fixed secret and `context`, at a fixed instant.
fn seeded_env(context: &str) -> RenderEnv {
    RenderEnv {
        entropy: Some(RenderEntropy::derive(std::sync::Arc::new(airlock_bundle::mac::Secret::new(&[42; 32])), &[context.as_bytes()])),
        now: Some("2024-05-01T10:00:00Z".parse().unwrap()),
        ..RenderEnv::default()
    }
}

fn seeded(text: &str) -> String {
    render_with(&SOURCE, text, &data(), &seeded_env("test")).unwrap_or_else(|err| panic!("{text:?} failed: {err}"))
}

fn at(line: usize, column: usize) -> Location {
    SOURCE.at(line, column)
}

/// The message an operator reads names where to look.
fn assert_names_source(err: &TemplateError, line: usize) {
    let message = err.to_string();
    for part in [r#"profile "web""#, "ConfigMap default/web-config", r#"key "deploy.yaml""#, &format!("line {line},")] {
        assert!(message.contains(part), "{message:?} does not name {part:?}");
    }
}

#[test]
fn reads_cluster_fields_labels_and_mgmt_resources() {
    assert_eq!(ok("{{ .Cluster.metadata.name }}/{{ .Cluster.metadata.namespace }}"), "edge-1/fleet");
    assert_eq!(ok(r#"{{ index .Cluster.metadata.labels "region" }}"#), "eu-west");
    assert_eq!(ok("{{ .Cluster.metadata.labels.tier }}"), "gold");
    assert_eq!(ok(r#"{{ (index .MgmtResources "cfg").data.replicas }}"#), "4");
    assert_eq!(ok("{{ $.Cluster.spec.replicas }} {{ .Cluster.spec.ratio }} {{ .Cluster.spec.pullMode }}"), "3 1.5 true");
    // `index` on a missing key is nil, not an error, as in Go with missingkey=error.
    assert_eq!(ok(r#"{{ index .Cluster.metadata.labels "zone" | default "none" }}"#), "none");
}

#[test]
fn ranges_over_lists_and_over_maps_in_key_order() {
    assert_eq!(ok("{{ range $i, $z := .Cluster.spec.zones }}{{ $i }}={{ $z }} {{ end }}"), "0=a 1=b 2=c ");
    assert_eq!(ok("{{ range $k, $v := .Cluster.metadata.labels }}{{ $k }}:{{ $v }};{{ end }}"), "env:prod;region:eu-west;tier:gold;");
    assert_eq!(ok("{{ range .Cluster.spec.empty }}x{{ else }}none{{ end }}"), "none");
    assert_eq!(ok("{{ range .Cluster.spec.zones }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}"), "a");
}

#[test]
fn branches_binds_variables_and_scopes_with() {
    let text =
        r#"{{ $tier := .Cluster.metadata.labels.tier }}{{ if eq $tier "silver" }}s{{ else if eq $tier "gold" }}g{{ else }}o{{ end }}"#;
    assert_eq!(ok(text), "g");
    assert_eq!(ok("{{ with .Cluster.metadata }}{{ .name }}{{ end }}{{ with .Cluster.spec.note }}x{{ else }}-{{ end }}"), "edge-1-");
    assert_eq!(ok(r#"{{ define "zone" }}zone-{{ . }}{{ end }}{{ template "zone" index .Cluster.spec.zones 1 }}"#), "zone-b");
}

#[test]
fn trims_whitespace_around_dashed_delimiters() {
    let text = "metadata:\n  labels:\n  {{- range $k, $v := .Cluster.metadata.labels }}\n    {{ $k }}: {{ $v }}\n  {{- end }}\n";
    assert_eq!(ok(text), "metadata:\n  labels:\n    env: prod\n    region: eu-west\n    tier: gold\n");
    assert_eq!(ok("a   {{- /* comment */ -}}   b"), "ab");
}

#[test]
fn renders_a_realistic_deployment() {
    let text = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{{ .Cluster.metadata.name }}
  labels: {{- toYaml .Cluster.metadata.labels | nindent 4 }}
spec:
  replicas: {{ (index .MgmtResources "cfg").data.replicas | int }}
  template:
    spec:
      containers:
        - name: web
          image: {{ (index .MgmtResources "cfg").data.image | quote }}
          env:
            - name: REGION
              value: {{ index .Cluster.metadata.labels "region" | upper | quote }}
"#;
    let expected = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-edge-1
  labels:
    env: prod
    region: eu-west
    tier: gold
spec:
  replicas: 4
  template:
    spec:
      containers:
        - name: web
          image: "nginx:1.27"
          env:
            - name: REGION
              value: "EU-WEST"
"#;
    assert_eq!(ok(text), expected);
}

#[test]
fn fn_default_replaces_empty_values_only() {
    assert_eq!(ok(r#"{{ .Cluster.spec.note | default "none" }}"#), "none");
    assert_eq!(ok(r#"{{ default "x" .Cluster.metadata.name }}"#), "edge-1");
    assert_eq!(
        ok(r#"{{ default 5 0 }} {{ default "d" false }} {{ default "d" .Cluster.spec.empty }} {{ default "d" (dict) }}"#),
        "5 d d d"
    );
    assert_eq!(ok(r#"{{ default "kept" true }} {{ default "d" }}"#), "true d");
}

#[test]
fn fn_empty_follows_go_rules() {
    assert_eq!(
        ok(r#"{{ empty "" }} {{ empty 0 }} {{ empty .Cluster.spec.empty }} {{ empty (dict) }} {{ empty false }}"#),
        "true true true true true"
    );
    assert_eq!(
        ok(r#"{{ empty "a" }} {{ empty 1.5 }} {{ empty .Cluster.spec.zones }} {{ empty .Cluster.metadata }}"#),
        "false false false false"
    );
}

#[test]
fn fn_coalesce_returns_first_non_empty() {
    assert_eq!(ok(r#"{{ coalesce "" 0 .Cluster.spec.note "first" "second" }}"#), "first");
    assert_eq!(ok(r#"{{ coalesce "" 0 | empty }}"#), "true");
}

#[test]
fn fn_quote_and_squote_wrap_each_argument() {
    assert_eq!(ok(r#"{{ quote "a\"b" 3 }}"#), r#""a\"b" "3""#);
    assert_eq!(ok(r#"{{ "tab\there\né" | quote }}"#), r#""tab\there\né""#);
    assert_eq!(ok(r#"{{ quote (index .Cluster.metadata.labels "none") "x" }}"#), r#""x""#);
    assert_eq!(ok(r#"{{ squote "a" 1 }}"#), "'a' '1'");
}

#[test]
fn fn_upper_lower_title_trim() {
    assert_eq!(ok(r#"{{ upper "eu-West" }} {{ lower "EU-West" }}"#), "EU-WEST eu-west");
    assert_eq!(ok(r#"{{ title "hello world-foo_bar" }}"#), "Hello World-Foo_bar");
    assert_eq!(ok("{{ trim \"  a b \\n\" }}"), "a b");
}

#[test]
fn fn_trim_prefix_suffix_and_replace_take_the_string_last() {
    assert_eq!(ok(r#"{{ "v1.2" | trimPrefix "v" }} {{ trimPrefix "x" "v1" }}"#), "1.2 v1");
    assert_eq!(ok(r#"{{ "app.yaml" | trimSuffix ".yaml" }}"#), "app");
    assert_eq!(ok(r#"{{ .Cluster.metadata.labels.region | replace "-" "_" }}"#), "eu_west");
}

#[test]
fn fn_contains_has_prefix_has_suffix() {
    assert_eq!(ok(r#"{{ contains "west" .Cluster.metadata.labels.region }} {{ contains "x" "abc" }}"#), "true false");
    assert_eq!(ok(r#"{{ hasPrefix "eu-" .Cluster.metadata.labels.region }} {{ hasSuffix "-1" .Cluster.metadata.name }}"#), "true true");
    assert_eq!(ok(r#"{{ hasPrefix "us-" .Cluster.metadata.labels.region }} {{ hasSuffix "x" "abc" }}"#), "false false");
}

#[test]
fn fn_to_yaml_has_no_trailing_newline() {
    assert_eq!(ok("{{ toYaml .Cluster.metadata.labels }}"), "env: prod\nregion: eu-west\ntier: gold");
    assert_eq!(ok("{{ toYaml .Cluster.spec.zones }}"), "- a\n- b\n- c");
    assert_eq!(ok("{{ toYaml (dict \"count\" 3.0 \"s\" \"yes\") }}"), "count: 3\ns: \"yes\"");
}

#[test]
fn fn_to_yaml_indents_as_yaml_v3() {
    let nested = r#"{{ toYaml (dict "outer" (dict "inner" "x" "list" (list "a" (dict "k" "v" "w" 1)))) }}"#;
    assert_eq!(ok(nested), "outer:\n    inner: x\n    list:\n        - a\n        - k: v\n          w: 1");
    let long = "word ".repeat(30);
    assert_eq!(ok(&format!("{{{{ toYaml (dict \"s\" \"{}\") }}}}", long.trim())), format!("s: {}", long.trim()), "never folded");
}

#[test]
fn fn_to_json_escapes_html_like_go() {
    assert_eq!(ok("{{ toJson .Cluster.metadata.labels }}"), r#"{"env":"prod","region":"eu-west","tier":"gold"}"#);
    assert_eq!(ok(r#"{{ toJson (list "<a&b>" 1 2.5) }}"#), r#"["\u003ca\u0026b\u003e",1,2.5]"#);
}

#[test]
fn fn_from_yaml_reads_a_mapping() {
    assert_eq!(ok("{{ $m := fromYaml \"a: 0644\\nb: [x, y, yes]\" }}{{ $m.a }} {{ $m.b }}"), "420 [x y yes]");
    assert_eq!(ok(r#"{{ fromYaml "" | len }}"#), "0");
    let err = failure(r#"{{ fromYaml "- a" }}"#);
    assert!(matches!(&err, TemplateError::Execution { message, .. } if message.contains("expected a YAML mapping")), "{err}");
}

#[test]
fn fn_indent_and_nindent_pad_every_line() {
    assert_eq!(ok("{{ indent 2 \"a\\nb\" }}"), "  a\n  b");
    assert_eq!(ok("x:{{ \"a\\nb\" | nindent 4 }}"), "x:\n    a\n    b");
}

#[test]
fn fn_b64enc_and_b64dec_round_trip() {
    assert_eq!(ok(r#"{{ b64enc "user:pass" }}"#), "dXNlcjpwYXNz");
    assert_eq!(ok(r#"{{ "dXNlcjpwYXNz" | b64dec }}"#), "user:pass");
    let err = failure(r#"{{ b64dec "not base64!" }}"#);
    assert!(matches!(&err, TemplateError::Execution { message, .. } if message.contains("invalid base64")), "{err}");
}

#[test]
fn fn_required_passes_present_values_through() {
    assert_eq!(ok(r#"{{ required "region label" .Cluster.metadata.labels.region }}"#), "eu-west");
    assert_eq!(ok(r#"{{ required "replicas" 0 }}"#), "0");
}

#[test]
fn fn_ternary_picks_by_condition() {
    assert_eq!(
        ok(r#"{{ ternary "yes" "no" true }} {{ .Cluster.spec.pullMode | ternary "pull" "push" }} {{ ternary 1 2 false }}"#),
        "yes pull 2"
    );
}

#[test]
fn fn_list_and_dict_build_values() {
    assert_eq!(ok(r#"{{ list 1 "a" | len }} {{ index (list "x" "y") 1 }}"#), "2 y");
    assert_eq!(ok(r#"{{ (dict "a" 1 "b" "x").b }} {{ (dict "k" 1 "odd").odd | quote }}"#), r#"x """#);
}

#[test]
fn fn_join_and_split() {
    assert_eq!(ok(r#"{{ join "," .Cluster.spec.zones }} {{ list "a" 1 | join "-" }} {{ join "," "solo" }}"#), "a,b,c a-1 solo");
    assert_eq!(ok(r#"{{ (split "." "a.b.c")._1 }} {{ split "." "a.b.c" | len }}"#), "b 3");
}

#[test]
fn fn_printf_and_print_from_go() {
    assert_eq!(ok(r#"{{ printf "%s-%d" .Cluster.metadata.name .Cluster.spec.replicas }}"#), "edge-1-3");
    assert_eq!(ok(r#"{{ print "a" 1 2 "b" }} {{ printf "%q" "x" }}"#), r#"a1 2b "x""#);
}

#[test]
fn fn_len_counts_strings_lists_and_maps() {
    assert_eq!(ok(r#"{{ len .Cluster.spec.zones }} {{ len "abc" }} {{ len .Cluster.metadata.labels }}"#), "3 3 3");
}

#[test]
fn fn_comparisons_and_logic_from_go() {
    assert_eq!(
        ok(r#"{{ eq .Cluster.spec.replicas 3 }} {{ ne "a" "b" }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt 3 2 }} {{ ge 1 2 }}"#),
        "true true true true true false"
    );
    assert_eq!(ok(r#"{{ and 1 "x" }} {{ or 0 "" "z" }} {{ not .Cluster.spec.pullMode }}"#), "x z false");
}

#[test]
fn rejects_syntax_error_on_line_3() {
    let err = failure("a: 1\nb: 2\nc: {{ .Cluster.metadata.name | }}\nd: 4\n");
    assert!(matches!(&err, TemplateError::Syntax { at, .. } if at.line == 3), "{err:?}");
    assert_names_source(&err, 3);
}

#[test]
fn rejects_unclosed_action_at_its_opening() {
    let err = failure("a: 1\nb: 2\nc: {{ .Cluster.metadata.name\n\n");
    assert_eq!(err, TemplateError::Syntax { at: at(3, 4), message: "unclosed action: no }} after this {{".into() });
    assert_names_source(&err, 3);
}

#[test]
fn rejects_stray_end_and_unclosed_block() {
    let err = failure("a: 1\nb: {{ .Cluster.metadata.name }}\n{{ end }}\nc: 3\n");
    assert_eq!(err, TemplateError::Syntax { at: at(3, 4), message: "unexpected {{end}}".into() });
    assert_names_source(&err, 3);
    let err = failure("a: 1\n{{ if .Cluster.spec.pullMode }}\nb: 2\n");
    assert_eq!(err, TemplateError::Syntax { at: at(2, 4), message: "{{if}} is never closed with {{end}}".into() });
}

#[test]
fn rejects_undefined_function_even_in_a_branch_not_taken() {
    let err = failure("a: 1\nb: 2\nc: {{ if false }}{{ nosuch .Cluster }}{{ end }}\n");
    assert_eq!(err, TemplateError::UndefinedFunction { at: at(3, 21), name: "nosuch".into() });
    assert_names_source(&err, 3);
}

#[test]
fn rejects_missing_key_like_sveltos() {
    let err = failure("a: 1\nb: 2\nc: {{ .Cluster.metadata.labels.zone }}\n");
    assert_eq!(err, TemplateError::MissingKey { at: at(3, 7), key: "zone".into() });
    assert_names_source(&err, 3);
}

#[test]
fn rejects_required_with_an_empty_value() {
    let err = failure("a: 1\nb: 2\nc: {{ required \"the note is required\" .Cluster.spec.note }}\n");
    assert_eq!(err, TemplateError::Required { at: at(3, 7), message: "the note is required".into() });
    assert!(err.to_string().ends_with("required: the note is required"), "{err}");
    assert_names_source(&err, 3);
}

#[test]
fn runtime_errors_name_the_line_of_else_if_and_defined_templates() {
    let err = failure("{{ if false }}\nx\n{{ else if .Cluster.nope }}\ny\n{{ end }}");
    assert_eq!(err, TemplateError::MissingKey { at: at(3, 9), key: "nope".into() });
    let err = failure("{{ define \"d\" }}\n{{ upper 3 }}\n{{ end }}\n{{ template \"d\" . }}");
    assert!(matches!(&err, TemplateError::Execution { at, message } if at.line == 2 && message.contains("upper")), "{err:?}");
    let err = failure("{{ range .MgmtResources }}\n{{ .missing }}\n{{ end }}");
    assert_eq!(err, TemplateError::MissingKey { at: at(2, 4), key: "missing".into() });
}

#[test]
fn rejects_wrong_argument_types() {
    let err = failure("\n{{ ternary 1 2 \"yes\" }}");
    assert!(matches!(&err, TemplateError::Execution { at, message } if at.line == 2 && message.contains("must be a bool")), "{err:?}");
}

#[test]
fn rejects_oversized_output_and_runaway_loops() {
    let small = RenderLimits { range_iterations: 10, output_bytes: 8, costly_calls: 0 };
    let env = RenderEnv::default();
    let err = render_within(&SOURCE, "{{ range 3 }}\nabcd{{ end }}", &data(), &env, &small).expect_err("output over 8 bytes");
    assert_eq!(err, TemplateError::OutputTooLarge { at: at(1, 4), limit_bytes: 8 });
    let err = render_within(&SOURCE, "{{ range 11 }}{{ end }}", &data(), &env, &small).expect_err("more than 10 iterations");
    assert!(matches!(&err, TemplateError::Execution { message, .. } if message.contains("range")), "{err:?}");
}

/// Regression, found by the `template` fuzz target: each of these asked for gigabytes in
/// one call or a few, and the publisher died of memory before the output cap saw a byte.
#[test]
fn rejects_values_over_the_limit_before_building_them() {
    let seed = format!("{{{{ $a := \"{}\" }}}}", "x".repeat(1024));
    let squaring = format!("{seed}{}", r#"{{ $a = replace "" $a $a }}"#.repeat(4));
    let join = format!("{seed}{{{{ $a = printf \"%s%s%s%s\" $a $a $a $a }}}}{{{{ join $a (list {}) }}}}", "$a ".repeat(2000));
    for (text, function) in [
        (r#"{{ indent 99999999999 "x" }}"#, "indent"),
        (r#"{{ nindent 3000000000 "a\nb" }}"#, "nindent"),
        (squaring.as_str(), "replace"),
        (join.as_str(), "join"),
    ] {
        let err = failure(text);
        assert!(
            matches!(&err, TemplateError::Execution { message, .. }
                if message.contains(&format!("error calling {function}:")) && message.contains("limit of a value")),
            "{function}: {err}"
        );
    }
    // Below the limit the same functions work: 1 KiB squared is 1 MiB.
    let squared = ok(&format!("{seed}{}{{{{ len $a }}}}", r#"{{ $a = replace "" $a $a }}"#));
    assert_eq!(squared, (1024 * 1025 + 1024).to_string());
}

#[test]
fn renders_whitespace_only_and_define_only_templates() {
    assert_eq!(ok(""), "");
    assert_eq!(ok("  \n"), "  \n");
    assert_eq!(ok("{{ define \"x\" }}{{ .nope }}{{ end }}\n"), "\n");
}

/// A thread keeps what it compiled: the same text runs again with other data, and an error
/// in a later run names its own position, not one left over from an earlier run.
#[test]
fn a_compiled_template_runs_again_with_other_data_and_positions() {
    let text = "name: {{ .Cluster.metadata.name }}\n{{ if .Cluster.spec.fail }}{{ .Cluster.nope }}{{ end }}";
    let with = |name: &str, fail: bool| json!({"Cluster": {"metadata": {"name": name}, "spec": {"fail": fail}}, "MgmtResources": {}});
    assert_eq!(render(&SOURCE, text, &with("a", false)).unwrap(), "name: a\n");
    assert_eq!(render(&SOURCE, text, &with("b", false)).unwrap(), "name: b\n");
    let err = render(&SOURCE, text, &with("c", true)).unwrap_err();
    assert_eq!(err, TemplateError::MissingKey { at: at(2, 31), key: "nope".into() });
    let other = TemplateSource { key: "other.yaml", ..SOURCE };
    let err = render(&other, "{{ .Cluster.nope }}", &with("d", false)).unwrap_err();
    assert!(err.to_string().contains(r#"key "other.yaml""#), "{err}");
    let err = render(&other, "{{ nosuch }}", &with("d", false)).unwrap_err();
    assert!(matches!(&err, TemplateError::UndefinedFunction { at, .. } if at.key == "other.yaml"), "{err}");
}
