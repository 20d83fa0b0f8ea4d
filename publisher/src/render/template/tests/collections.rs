//! List and dictionary functions: Sprig's documented examples and the errors.

use super::*;

const LIST: &str = r#"{{ $l := list 1 2 3 4 5 }}"#;

fn with_list(body: &str) -> String {
    ok(&format!("{LIST}{body}"))
}

#[test]
fn fn_list_ends_and_slices() {
    assert_eq!(with_list("{{ first $l }} {{ rest $l }} {{ last $l }} {{ initial $l }}"), "1 [2 3 4 5] 5 [1 2 3 4]");
    assert_eq!(
        ok("{{ first list }}|{{ rest list }}|{{ last list }}|{{ initial list }}|{{ mustFirst (list) }}"),
        "<no value>|[]|<no value>|[]|<no value>"
    );
    assert_eq!(
        with_list("{{ slice $l }} {{ slice $l 3 }} {{ slice $l 1 3 }} {{ slice $l 0 3 }} {{ slice list }}"),
        "[1 2 3 4 5] [4 5] [2 3] [1 2 3] <no value>"
    );
    assert_eq!(ok(r#"{{ slice "hello" 1 3 }}"#), "el");
    assert_eq!(
        with_list("{{ append $l 6 | len }} {{ append $l 6 }} {{ push $l 6 | last }} {{ prepend $l 0 }} {{ $l }}"),
        "6 [1 2 3 4 5 6] 6 [0 1 2 3 4 5] [1 2 3 4 5]"
    );
    assert_eq!(
        with_list("{{ concat $l (list 6 7) (list 8) }} {{ reverse $l }} {{ mustReverse list }}"),
        "[1 2 3 4 5 6 7 8] [5 4 3 2 1] []"
    );
}

#[test]
fn fn_list_filters_compare_deeply() {
    assert_eq!(ok(r#"{{ uniq (list 1 1 1 2) }} {{ uniq (list (list 1) (list 1) "1" 1) }}"#), "[1 2] [[1] 1 1]");
    assert_eq!(with_list("{{ without $l 1 3 5 }} {{ has 4 $l }} {{ has 9 $l }} {{ has 1 nil }}"), "[2 4] true false false");
    assert_eq!(ok(r#"{{ compact (list 1 "a" "foo" "" 0 nil false (list)) }} {{ mustCompact (list) }}"#), "[1 a foo] []");
    assert_eq!(ok(r#"{{ chunk 3 (list 1 2 3 4 5 6 7 8) }} {{ chunk 2 list | len }}"#), "[[1 2 3] [4 5 6] [7 8]] 0");
    assert_eq!(ok(r#"{{ has (dict "a" 1) (list (dict "a" 1)) }} {{ has 1 (list 1.0) }}"#), "true false");
}

#[test]
fn fn_dict_get_set_unset_has_key() {
    let d = r#"{{ $d := dict "name1" "value1" "name2" "value2" }}"#;
    assert_eq!(
        ok(&format!(r#"{d}{{{{ get $d "name1" }}}}|{{{{ get $d "missing" }}}}|{{{{ hasKey $d "name2" }}}} {{{{ hasKey $d "x" }}}}"#)),
        "value1||true false"
    );
    assert_eq!(
        ok(&format!(r#"{d}{{{{ $e := set $d "name3" "value3" }}}}{{{{ len $e }}}} {{{{ len $d }}}} {{{{ unset $d "name1" }}}}"#)),
        "3 2 map[name2:value2]"
    );
    assert_eq!(ok(r#"{{ $d := dict }}{{ $d = set $d "k" "v" }}{{ $d.k }}"#), "v");
    assert_eq!(ok(r#"{{ dict 1 2 true "x" "odd" }}"#), "map[1:2 odd: true:x]");
}

#[test]
fn fn_dict_pluck_dig_pick_omit_keys_values() {
    assert_eq!(ok(r#"{{ pluck "name1" (dict "name1" "value1") (dict "name1" "banana") (dict "x" 1) }}"#), "[value1 banana]");
    let nested = r#"{{ $d := dict "user" (dict "role" (dict "humanName" "admin")) }}"#;
    assert_eq!(
        ok(&format!(
            r#"{nested}{{{{ dig "user" "role" "humanName" "guest" $d }}}} {{{{ dig "user" "missing" "guest" $d }}}} {{{{ dig "user" "role" "x" $d }}}}"#
        )),
        "admin guest map[humanName:admin]"
    );
    let d = r#"{{ $d := dict "b" 2 "a" 1 "c" 3 }}"#;
    assert_eq!(
        ok(&format!(r#"{d}{{{{ pick $d "a" "c" "z" }}}} {{{{ omit $d "a" "c" }}}} {{{{ keys $d }}}} {{{{ values $d }}}}"#)),
        "map[a:1 c:3] map[b:2] [a b c] [1 2 3]"
    );
    assert_eq!(ok(r#"{{ keys (dict "a" 1) (dict "a" 2 "b" 3) | sortAlpha }} {{ keys | len }}"#), "[a a b] 0");
    assert_eq!(ok(r#"{{ $a := dict "x" (list 1) }}{{ $b := deepCopy $a }}{{ deepEqual $a $b }} {{ mustDeepCopy 3 }}"#), "true 3");
}

#[test]
fn fn_merge_and_merge_overwrite_follow_mergo() {
    let dst = r#"{{ $dst := dict "default" "default" "overwrite" "me" "key" true "empty" "" "nested" (dict "a" 1) }}"#;
    let src = r#"{{ $src := dict "overwrite" "overwritten" "key" false "empty" "filled" "nested" (dict "a" 2 "b" 3) "new" nil }}"#;
    assert_eq!(
        ok(&format!("{dst}{src}{{{{ merge $dst $src }}}}")),
        "map[default:default empty:filled key:true nested:map[a:1 b:3] overwrite:me]"
    );
    assert_eq!(
        ok(&format!("{dst}{src}{{{{ mergeOverwrite $dst $src }}}} {{{{ $dst.overwrite }}}}")),
        "map[default:default empty:filled key:false nested:map[a:2 b:3] overwrite:overwritten] me"
    );
    assert_eq!(ok(r#"{{ mustMerge (dict "a" 1) (dict "b" 2) (dict "a" 3 "c" 4) }}"#), "map[a:1 b:2 c:4]");
}

#[test]
fn rejects_bad_collection_arguments() {
    for (text, needle) in [
        ("{{ first 3 }}", "must be a list, got int"),
        ("{{ mustLast (dict) }}", "must be a list, got map"),
        ("{{ append (dict) 1 }}", "must be a list"),
        (r#"{{ concat (list 1) "x" }}"#, "argument 2 must be a list"),
        ("{{ slice (list 1 2) 2 1 }}", "out of range"),
        ("{{ slice (list 1 2) 0 3 }}", "out of range"),
        ("{{ chunk 0 (list 1) }}", "at least 1"),
        (r#"{{ get (list) "a" }}"#, "must be a map"),
        ("{{ set (dict) 1 2 }}", "argument 2 must be a string"),
        (r#"{{ dig "a" "b" "d" (dict "a" 1) }}"#, "is a int, not a map"),
        (r#"{{ dig "a" (dict) }}"#, "dig expects 3, got 2"),
        (r#"{{ pick (dict) 1 }}"#, "must be a string"),
        (r#"{{ merge (dict) (list) }}"#, "argument 2 must be a map"),
    ] {
        let message = error_message(text);
        assert!(message.contains(needle), "{text}: {message}");
    }
}

/// Lists whose items share sub-lists stand for trees far larger than memory; functions
/// that walk them stop at the bounds instead of running out.
#[test]
fn rejects_lists_past_the_bounds() {
    let deep = format!("{{{{ $l := list }}}}{}{{{{ len $l }}}}", "{{ $l = list $l }}".repeat(bounds::MAX_DEPTH + 1));
    assert!(error_message(&deep).contains("nests deeper than"), "nesting");
    let doubled = format!("{{{{ $l := list 1 }}}}{}", "{{ $l = list $l $l }}".repeat(64));
    assert!(error_message(&format!("{doubled}{{{{ toJson $l }}}}")).contains("more than"), "toJson");
    assert!(error_message(&format!("{doubled}{{{{ uniq (list $l) }}}}")).contains("too large"), "uniq");
    assert_eq!(ok(&format!("{doubled}{{{{ deepEqual $l $l }}}}")), "true");
    let other = format!("{{{{ $m := list 1 }}}}{}", "{{ $m = list $m $m }}".repeat(64));
    assert!(error_message(&format!("{doubled}{other}{{{{ deepEqual $l $m }}}}")).contains("too large to compare"), "deepEqual");
    assert!(error_message("{{ concat (until 600000) (until 600000) }}").contains("item limit"), "concat");
}
