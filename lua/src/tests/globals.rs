//! `getResource`, `getLabel`, `getAnnotation`, `base64Encode`, `base64Decode`, with
//! libsveltos's return conventions.

use serde_json::json;

use super::super::LuaError;
use super::{show, show_err, show_with};

fn cluster() -> serde_json::Value {
    json!({"Cluster": {"kind": "SveltosCluster", "metadata": {"name": "edge-1",
        "labels": {"env": "prod"}, "annotations": {"environment": "production"}}}, "Bare": {"kind": "Thing"}})
}

#[test]
fn get_resource_finds_by_identifier() {
    let shown = show_with(r#"getResource(resources, "Cluster").kind, getResource(resources, "Missing")"#, cluster()).unwrap();
    assert_eq!(shown, "'SveltosCluster' nil");
}

#[test]
fn get_label_and_get_annotation_read_metadata() {
    let shown = show_with(
        r#"getLabel(resources.Cluster, "env"), getLabel(resources.Cluster, "region"), getAnnotation(resources.Cluster, "environment"),
           getLabel(resources.Bare, "env"), getAnnotation(resources.Bare, "x"), getLabel({metadata = {labels = {n = 1}}}, "n")"#,
        cluster(),
    )
    .unwrap();
    assert_eq!(shown, "'prod' nil 'production' nil nil nil");
}

#[test]
fn two_argument_helpers_answer_other_counts_with_nil_and_a_message() {
    for helper in ["getResource", "getLabel", "getAnnotation"] {
        let message = "nil 'expected 2 arguments (table, key)'";
        assert_eq!(show_with(&format!("{helper}(resources)"), cluster()).unwrap(), message, "{helper}");
        assert_eq!(show_with(&format!("{helper}(resources, 'Cluster', nil)"), cluster()).unwrap(), message, "{helper}");
    }
}

#[test]
fn two_argument_helpers_fail_on_a_non_table() {
    let err = show_err(r#"getResource(nil, "Cluster")"#);
    assert!(matches!(err, LuaError::Runtime { message, .. } if message == "bad argument #1 to getResource (table expected, got nil)"));
}

#[test]
fn base64_round_trips_and_answers_empty_input_with_a_message() {
    assert_eq!(
        show(r#"base64Encode("imported-secret"), base64Decode("aW1wb3J0ZWQtc2VjcmV0"), base64Encode(12)"#),
        "'aW1wb3J0ZWQtc2VjcmV0' 'imported-secret' 'MTI='"
    );
    assert_eq!(show(r#"base64Encode("")"#), "nil 'provided string is empty'");
    assert_eq!(show(r#"base64Decode("")"#), "nil 'provided string is empty'");
}

#[test]
fn base64_decode_is_go_s_std_encoding() {
    assert_eq!(show(r#"base64Decode("aW1w\r\nb3J0ZWQ="), base64Decode("YR=="), base64Decode("\n")"#), "'imported' 'a' ''");
    for refused in ["YQ", "!!!!", "YQ==YQ==", "Y Q=="] {
        assert_eq!(show(&format!("base64Decode({refused:?})")), "nil 'deconding failed'", "{refused}");
    }
}
