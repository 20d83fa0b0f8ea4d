//! Math, conversion and sequence functions: Sprig's documented examples, spf13/cast's
//! conversions, Go's wrapping, and the errors.

use super::*;

#[test]
fn fn_integer_math_converts_like_cast() {
    assert_eq!(ok("{{ add 1 2 3 }} {{ add1 4 }} {{ sub 5 7 }} {{ div 7 2 }} {{ mod 7 2 }} {{ mul 2 3 4 }} {{ add }}"), "6 5 -2 3 1 24 0");
    assert_eq!(ok(r#"{{ add "2" 3.9 true nil "x" }} {{ max 1 "5" 3 }} {{ biggest 4 2 }} {{ min 4 "-2" 7 }}"#), "6 5 4 -2");
    assert_eq!(ok("{{ div -7 2 }} {{ mod -7 2 }} {{ add 9223372036854775807 1 }}"), "-3 -1 -9223372036854775808");
    assert_eq!(ok(r#"{{ (index .MgmtResources "cfg").data.replicas | add 1 }}"#), "5");
}

#[test]
fn fn_conversions() {
    assert_eq!(
        ok(
            r#"{{ int "42" }} {{ int "0x1f" }} {{ int 3.9 }} {{ int true }} {{ int "abc" }} {{ int "7.0" }} {{ int "-5" }} {{ int64 "0o17" }} {{ int "1_000" }}"#
        ),
        "42 31 3 1 0 7 -5 15 1000"
    );
    assert_eq!(ok(r#"{{ atoi "42" }} {{ atoi " 42" }} {{ atoi "0x1f" }} {{ atoi "-7" }}"#), "42 0 0 -7");
    assert_eq!(ok(r#"{{ float64 "1.5" }} {{ float64 "1e3" }} {{ float64 3 }} {{ float64 "x" }} {{ float64 true }}"#), "1.5 1000 3 0 1");
    assert_eq!(ok(r#"{{ toDecimal "0777" }} {{ toDecimal 777 }} {{ toDecimal "8" }}"#), "511 511 0");
    assert_eq!(ok(r#"{{ int64 "9223372036854775808" }} {{ int 1e20 }}"#), "0 -9223372036854775808");
}

#[test]
fn fn_float_math_is_decimal_exact() {
    assert_eq!(ok("{{ addf 1.5 2 2 }} {{ add1f 1.5 }} {{ subf 7.5 2 3 }} {{ mulf 1.5 2 2 }} {{ divf 10 2 4 }}"), "5.5 2.5 2.5 6 1.25");
    assert_eq!(ok("{{ addf 1.1 2.2 }} {{ mulf 1.1 3 }} {{ subf 0.3 0.1 }} {{ addf }}"), "3.3 3.3 0.2 0");
    assert_eq!(ok(r#"{{ maxf 1 2.5 3 }} {{ minf 1.5 2 3 }} {{ maxf "4.5" 1 }}"#), "3 1.5 4.5");
    assert_eq!(
        ok("{{ floor 123.9999 }} {{ ceil 123.001 }} {{ round 123.555555 3 }} {{ round 123.5555 3 0.6 }} {{ round -2.5 0 }}"),
        "123 124 123.556 123.555 -3"
    );
}

#[test]
fn fn_sequences() {
    assert_eq!(
        ok("{{ until 5 }} {{ until -3 }} {{ until 0 }} {{ untilStep 3 6 2 }} {{ untilStep 10 1 -3 }} {{ untilStep 1 5 -1 }}"),
        "[0 1 2 3 4] [0 -1 -2] [] [3 5] [10 7 4] []"
    );
    assert_eq!(
        ok(r#"{{ seq 5 }}|{{ seq -3 }}|{{ seq 0 2 }}|{{ seq 2 -2 }}|{{ seq 0 2 10 }}|{{ seq 0 -2 -5 }}|{{ seq 5 2 1 }}|{{ seq }}"#),
        "1 2 3 4 5|1 0 -1 -2 -3|0 1 2|2 1 0 -1 -2|0 2 4 6 8 10|0 -2 -4||"
    );
    assert_eq!(ok("{{ range $i := until 3 }}{{ $i }}{{ end }}"), "012");
}

#[test]
fn rejects_bad_math_arguments() {
    for (text, needle) in [
        ("{{ div 1 0 }}", "integer divide by zero"),
        ("{{ mod 1 0 }}", "integer divide by zero"),
        ("{{ divf 1 0 }}", "decimal division by 0"),
        (r#"{{ until "5" }}"#, "must be an integer"),
        ("{{ untilStep 0 10 }}", "untilStep expects 3, got 2"),
        ("{{ round 1.5 }}", "round expects 2, got 1"),
        (r#"{{ round 1.5 0 "x" }}"#, "must be a number"),
        (r#"{{ atoi 5 }}"#, "must be a string"),
        ("{{ sub 1 }}", "sub expects 2, got 1"),
        ("{{ max }}", "max expects 1, got 0"),
    ] {
        let message = error_message(text);
        assert!(message.contains(needle), "{text}: {message}");
    }
}

#[test]
fn rejects_sequences_past_the_item_limit_before_building_them() {
    for (text, function) in
        [("{{ until 9999999999 }}", "untilStep"), ("{{ untilStep 0 9223372036854775807 1 }}", "untilStep"), ("{{ seq 100000000 }}", "seq")]
    {
        let message = error_message(text);
        assert!(message.contains("item limit"), "{function}: {message}");
    }
    assert_eq!(ok(&format!("{{{{ until {} | len }}}}", bounds::MAX_ITEMS)), bounds::MAX_ITEMS.to_string());
}

#[test]
fn fn_int_converts_like_sprig() {
    assert_eq!(
        ok(r#"{{ int "42" }} {{ int "0x1f" }} {{ int 3.9 }} {{ int true }} {{ int "abc" }} {{ int "7.0" }} {{ int "-5" }}"#),
        "42 31 3 1 0 7 -5"
    );
    assert_eq!(ok(r#"{{ (index .MgmtResources "cfg").data.replicas | int | printf "%d" }}"#), "4");
}

#[test]
fn fn_to_string_formats_like_go() {
    assert_eq!(ok(r#"{{ toString 3 | printf "%q" }} {{ toString .Cluster.spec.zones }} {{ toString "s" }}"#), r#""3" [a b c] s"#);
}
