//! `require("strings")`: each function against the answer Go's `strings` package gives
//! (most cases from Go's own examples), byte offsets and invalid bytes included.

use super::super::LuaError;
use super::{show, show_err};

#[test]
fn compare_contains_and_count() {
    assert_eq!(show(r#"strings.Compare("a", "b"), strings.Compare("b", "a"), strings.Compare("a", "a")"#), "-1 1 0");
    assert_eq!(
        show(r#"strings.Contains("seafood", "foo"), strings.Contains("seafood", ""), strings.Contains("seafood", "bar")"#),
        "true true false"
    );
    assert_eq!(
        show(r#"strings.ContainsAny("failure", "ui"), strings.ContainsAny("foo", ""), strings.ContainsAny("", "")"#),
        "true false false"
    );
    assert_eq!(show(r#"strings.ContainsRune("aardvark", 97), strings.ContainsRune("timeout", 97)"#), "true false");
    assert_eq!(show(r#"strings.Count("cheese", "e"), strings.Count("five", ""), strings.Count("héllo", "")"#), "3 5 6");
}

#[test]
fn equal_fold_folds_unicode_case() {
    assert_eq!(show(r#"strings.EqualFold("Go", "GO"), strings.EqualFold("σ", "ς"), strings.EqualFold("ß", "ẞ")"#), "true true true");
    assert_eq!(
        show(r#"strings.EqualFold("K", "\226\132\170"), strings.EqualFold("İ", "i"), strings.EqualFold("a", "ab")"#),
        "true false false"
    );
}

#[test]
fn fields_split_around_unicode_space() {
    assert_eq!(show(r#"strings.Fields("  foo bar\194\160 baz   "), strings.Fields("")"#), "{'foo','bar','baz'} {}");
    let shown =
        show(r#"strings.FieldsFunc("  foo1;bar2,baz3...", function(r) return not runes.isletter(r) and not runes.isnumber(r) end)"#);
    assert_eq!(shown, "{'foo1','bar2','baz3'}");
}

#[test]
fn prefixes_and_suffixes() {
    assert_eq!(
        show(r#"strings.HasPrefix("Gopher", "Go"), strings.HasPrefix("Gopher", ""), strings.HasSuffix("Amigo", "go")"#),
        "true true true"
    );
    assert_eq!(
        show(r#"strings.TrimPrefix("¡¡¡Hello", "¡¡¡"), strings.TrimPrefix("x", "y"), strings.TrimSuffix("a, Friends", ", Friends")"#),
        "'Hello' 'x' 'a'"
    );
}

#[test]
fn indices_are_zero_based_byte_offsets() {
    assert_eq!(show(r#"strings.Index("chicken", "ken"), strings.Index("chicken", "dmr"), strings.Index("héllo", "l")"#), "4 -1 3");
    assert_eq!(show(r#"strings.IndexAny("golang", "y"), strings.IndexAny("chicken", "kmr"), strings.IndexByte("golang", 103)"#), "-1 4 0");
    assert_eq!(show(r#"strings.IndexFunc("Hello, 世界", function(r) return r > 127 end)"#), "7");
    assert_eq!(
        show(r#"strings.IndexRune("chicken", 107), strings.IndexRune("chicken", 100), strings.IndexRune("a\255b", 65533)"#),
        "4 -1 1"
    );
    assert_eq!(show(r#"strings.IndexRune("x", -1), strings.IndexByte("golang", 120)"#), "-1 -1");
    assert_eq!(show(r#"strings.LastIndex("go gopher", "go"), strings.LastIndex("go gopher", ""), strings.LastIndex("go", "x")"#), "3 9 -1");
    assert_eq!(
        show(r#"strings.LastIndexAny("go gopher", "go"), strings.LastIndexAny("go gopher", "rodent"), strings.LastIndexAny("x", "")"#),
        "4 8 -1"
    );
    assert_eq!(show(r#"strings.LastIndexByte("Hello, world", 108), strings.LastIndexFunc("go123", runes.isdigit)"#), "10 4");
}

#[test]
fn join_takes_the_string_values() {
    assert_eq!(
        show(r#"strings.Join({"foo", "bar", "baz"}, ", "), strings.Join({"a", 1, "b"}, "-"), strings.Join({}, ",")"#),
        "'foo, bar, baz' 'a-b' ''"
    );
}

#[test]
fn map_drops_negative_runes() {
    let shown = show(r#"strings.Map(function(r) if r == 97 then return 65 end if r == 120 then return -1 end return r end, "axbxa")"#);
    assert_eq!(shown, "'AbA'");
    assert_eq!(show(r#"strings.Map(function(r) return r end, "a\255"), #strings.Map(function(r) return r end, "a\255")"#), "'a\u{FFFD}' 4");
}

#[test]
fn repeat_and_replace() {
    assert_eq!(show(r#"strings.Repeat("na", 2), strings.Repeat("x", 0), strings.Repeat("", 1e15)"#), "'nana' '' ''");
    assert_eq!(
        show(r#"strings.Replace("oink oink oink", "k", "ky", 2), strings.Replace("oink oink oink", "oink", "moo", -1)"#),
        "'oinky oinky oink' 'moo moo moo'"
    );
    assert_eq!(
        show(r#"strings.Replace("ab", "", "-", -1), strings.Replace("héllo", "", "-", 2), strings.Replace("a", "a", "b", 0)"#),
        "'-a-b-' '-h-éllo' 'a'"
    );
}

#[test]
fn split_and_its_variants() {
    assert_eq!(
        show(r#"strings.Split("a,b,c", ","), strings.Split("a man a plan a canal panama", "a ")"#),
        "{'a','b','c'} {'','man ','plan ','canal panama'}"
    );
    assert_eq!(show(r#"strings.Split(" xy ", ""), strings.Split("", "Bernardo"), strings.Split("", "")"#), "{' ','x','y',' '} {''} {}");
    assert_eq!(show(r#"strings.SplitAfter("a,b,c", ","), strings.SplitAfterN("a,b,c", ",", 2)"#), "{'a,','b,','c'} {'a,','b,c'}");
    assert_eq!(
        show(r#"strings.SplitN("a,b,c,d", ",", 2), strings.SplitN("a,b", ",", 0), strings.SplitN("a,b,c", ",", -1)"#),
        "{'a','b,c,d'} nil {'a','b','c'}"
    );
    assert_eq!(
        show(r#"strings.SplitN("abc", "", 2), strings.SplitAfterN("a,b", ",", 0), #strings.Split("a\255b", "")[2]"#),
        "{'a','bc'} nil 1"
    );
}

#[test]
fn case_mapping_is_go_s_simple_mapping() {
    assert_eq!(
        show(r#"strings.ToLower("Gopher"), strings.ToUpper("Gopher"), strings.ToTitle("loud noises")"#),
        "'gopher' 'GOPHER' 'LOUD NOISES'"
    );
    assert_eq!(show(r#"strings.ToUpper("ß"), strings.ToLower("İ"), strings.ToTitle("ǆ"), strings.ToUpper("ǆ")"#), "'ß' 'i' 'ǅ' 'Ǆ'");
    assert_eq!(show(r#"strings.ToUpper("a\255"), #strings.ToUpper("a\255")"#), "'A\u{FFFD}' 4");
    assert_eq!(
        show(r#"strings.Title("her royal highness"), strings.Title("hello_world foo-bar")"#),
        "'Her Royal Highness' 'Hello_world Foo-Bar'"
    );
}

#[test]
fn trimming() {
    assert_eq!(
        show(r#"strings.Trim("¡¡¡Hello, Gophers!!!", "!¡"), strings.TrimLeft("¡¡¡Hi!!!", "!¡"), strings.TrimRight("¡¡¡Hi!!!", "!¡")"#),
        "'Hello, Gophers' 'Hi!!!' '¡¡¡Hi'"
    );
    let punctuation = "function(r) return not runes.isletter(r) and not runes.isnumber(r) end";
    assert_eq!(
        show(&format!(
            r#"strings.TrimFunc("¡¡¡Hi!!!", {punctuation}), strings.TrimLeftFunc("¡¡¡Hi!!!", {punctuation}), strings.TrimRightFunc("¡¡¡Hi!!!", {punctuation})"#
        )),
        "'Hi' 'Hi!!!' '¡¡¡Hi'"
    );
    assert_eq!(
        show(r#"strings.TrimSpace(" \t\n Hello, Gophers \n\t\r\n"), strings.Trim("", "x"), strings.Trim("xax", "")"#),
        "'Hello, Gophers' '' 'xax'"
    );
}

#[test]
fn misuse_is_an_error_naming_the_function() {
    assert!(
        matches!(show_err(r#"strings.Repeat("x", -1)"#), LuaError::Runtime { message, .. } if message == "strings: negative Repeat count")
    );
    assert!(
        matches!(show_err(r#"strings.Index(nil, "x")"#), LuaError::Runtime { message, .. } if message == "bad argument #1 to Index (string expected, got nil)")
    );
    assert!(
        matches!(show_err(r#"strings.FieldsFunc("a b", function(r) return 1 end)"#), LuaError::Runtime { message, .. } if message == "callback returned number, not a boolean")
    );
    assert!(
        matches!(show_err(r#"strings.Map(function(r) error("inner", 0) end, "a")"#), LuaError::Runtime { message, .. } if message == "inner")
    );
}
