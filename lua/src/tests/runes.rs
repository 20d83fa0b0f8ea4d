//! `require("runes")`: each function against lua-utils' Go implementation.

use super::super::LuaError;
use super::{show, show_err};

#[test]
fn counting_and_positions() {
    assert_eq!(show(r#"runes.runecount("héllo"), runes.runecount("a\255"), runes.runecount("")"#), "5 2 0");
    assert_eq!(
        show(r#"runes.runeat("héllo", 2), runes.runeat("héllo", 3), runes.runeat("abc", 0), runes.runeat("abc", 4)"#),
        "233 nil nil nil"
    );
    assert_eq!(show(r#"runes.runeindex("héllo", 108), runes.runeindex("héllo", 108, 4), runes.runeindex("abc", 122)"#), "3 4 nil");
    assert_eq!(
        show(r#"runes.containsrune("héllo", 233), runes.containsrune("a\255", 65533), runes.containsrune("abc", 100)"#),
        "true true false"
    );
}

#[test]
fn ranges_end_before_their_end_index() {
    assert_eq!(
        show(r#"runes.runerange("héllo", 2, 4), runes.runerange("héllo", 2), runes.runerange("héllo"), runes.runerange("abc", 1, 0)"#),
        "'él' 'éllo' 'héllo' ''"
    );
    assert!(
        matches!(show_err(r#"runes.runerange("abc", 3, 2)"#), LuaError::Runtime { message, .. } if message.contains("slice bounds out of range"))
    );
}

#[test]
fn splitting_reversing_and_building() {
    assert_eq!(
        show(r#"runes.runesplit("a,b,,c", 44), runes.runesplit("", 44), runes.runesplit("abc", 44)"#),
        "{'a','b','','c'} {''} {'abc'}"
    );
    assert_eq!(
        show(r#"runes.reverserunes("héllo"), runes.runestring(104, 233), runes.runestring(), #runes.runestring(55296)"#),
        "'olléh' 'hé' '' 3"
    );
    assert_eq!(
        show(r#"runes.runeslice("hé"), runes.stringtobytes("hé"), runes.runetobytes({233, 104})"#),
        "{104,233} {104,195,169} {195,169,104}"
    );
    assert_eq!(
        show(r#"runes.bytestorune({195, 169}), runes.bytestorune({255}), runes.bytestorune({}), runes.bytetostring({104, 105})"#),
        "233 nil nil 'hi'"
    );
}

#[test]
fn widths_and_validity() {
    assert_eq!(
        show(r#"runes.runewidth(97), runes.runewidth(233), runes.runewidth(1114111), runes.runewidth(55296), runes.runewidth(-1)"#),
        "1 2 4 nil nil"
    );
    assert_eq!(
        show(r#"runes.validrune(1114111), runes.validrune(1114112), runes.validrune(-1), runes.validrune(55296)"#),
        "true false false false"
    );
    assert_eq!(
        show(r#"runes.isvalidutf8("héllo"), runes.isvalidutf8("a\255"), runes.isinrange(5, 1, 10), runes.isinrange(0, 1, 10)"#),
        "true false true false"
    );
}

#[test]
fn classes_are_go_s_general_categories() {
    assert_eq!(
        show("runes.isdigit(48), runes.isdigit(1635), runes.isdigit(189), runes.isnumber(189), runes.isdigit(65)"),
        "true true false true false"
    );
    assert_eq!(
        show("runes.isletter(65), runes.isletter(170), runes.islower(170), runes.islower(97), runes.isupper(65), runes.istitle(453)"),
        "true true false true true true"
    );
    assert_eq!(
        show("runes.isspace(32), runes.isspace(133), runes.isspace(8203), runes.iscontrol(10), runes.iscontrol(133), runes.iscontrol(65)"),
        "true true false true true false"
    );
    assert_eq!(
        show("runes.ispunct(33), runes.issymbol(43), runes.ispunct(43), runes.ismark(769), runes.ismark(97)"),
        "true true false true false"
    );
    assert_eq!(
        show("runes.isgraphic(32), runes.isprint(32), runes.isprint(160), runes.isgraphic(160), runes.isprint(10), runes.isupper(9398)"),
        "true true false true false false"
    );
    assert_eq!(show("runes.isletter(-1), runes.isdigit(55296)"), "false false");
}

#[test]
fn case_of_one_rune() {
    assert_eq!(
        show("runes.tolower(65), runes.toupper(97), runes.toupper(223), runes.totitle(454), runes.toupper(-5), runes.tolower(304)"),
        "97 65 223 453 -5 105"
    );
}

#[test]
fn misuse_is_an_error_naming_the_function() {
    assert!(
        matches!(show_err(r#"runes.isdigit("5")"#), LuaError::Runtime { message, .. } if message == "bad argument #1 to isdigit (number expected, got string)")
    );
    assert!(
        matches!(show_err("runes.runetobytes(1)"), LuaError::Runtime { message, .. } if message == "bad argument #1 to runetobytes (table expected, got number)")
    );
}
