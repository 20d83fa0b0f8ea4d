//! String functions: Sprig's documented examples, Go's byte offsets, and the errors.

use super::*;

#[test]
fn fn_trim_family_and_case() {
    assert_eq!(
        ok(r#"{{ trim "   hello    " }}|{{ trimAll "$" "$5.00" }}|{{ trimSuffix "-" "hello-" }}|{{ trimPrefix "-" "-hello" }}"#),
        "hello|5.00|hello|hello"
    );
    assert_eq!(
        ok(r#"{{ upper "hello" }} {{ lower "HELLO" }} {{ title "hello world" }} {{ untitle "Hello World" }}"#),
        "HELLO hello Hello World hello world"
    );
    assert_eq!(ok(r#"{{ upper "straße" }} {{ swapcase "This Is A.Test" }}"#), "STRAßE tHIS iS a.tEST");
    assert_eq!(ok(r#"{{ trimall "$" "$5$" }}"#), "5");
}

#[test]
fn fn_repeat_substr_trunc_count_bytes() {
    assert_eq!(ok(r#"{{ repeat 3 "hello" }}|{{ "ab" | repeat 0 }}"#), "hellohellohello|");
    assert_eq!(
        ok(
            r#"{{ substr 0 5 "hello world" }}|{{ substr -1 5 "hello world" }}|{{ substr 6 -1 "hello world" }}|{{ substr 6 99 "hello world" }}"#
        ),
        "hello|hello|world|world"
    );
    assert_eq!(
        ok(r#"{{ trunc 5 "hello world" }}|{{ trunc -5 "hello world" }}|{{ trunc 50 "hi" }}|{{ trunc -50 "hi" }}"#),
        "hello|world|hi|hi"
    );
    assert!(error_message(r#"{{ substr 1 2 "é" }}"#).contains("would split a character"));
    assert!(error_message(r#"{{ substr 3 1 "hello" }}"#).contains("out of range"));
    assert!(error_message(r#"{{ repeat -1 "x" }}"#).contains("must not be negative"));
}

#[test]
fn fn_abbrev_initials_wrap_nospace() {
    assert_eq!(
        ok(r#"{{ abbrev 5 "hello world" }}|{{ abbrev 3 "hello world" }}|{{ abbrevboth 5 10 "1234 5678 9123" }}"#),
        "he...|hello world|...5678..."
    );
    assert_eq!(ok(r#"{{ initials "First Try" }} {{ nospace "hello w o r l d" }}"#), "FT helloworld");
    assert_eq!(ok(r#"{{ wrapWith 5 "\t" "Hello World" }}"#), "Hello\tWorld");
    assert_eq!(ok(r#"{{ wrap 10 "the quick brown fox jumps" }}"#), "the quick\nbrown fox\njumps");
    assert_eq!(ok(r#"{{ wrap 3 "abcdefgh ij" }}|{{ wrapWith 3 "-" "abcdefgh" }}"#), "abcdefgh\nij|abc-def-gh");
}

#[test]
fn fn_case_conversions_follow_xstrings() {
    assert_eq!(
        ok(r#"{{ snakecase "FirstName" }} {{ camelcase "http_server" }} {{ kebabcase "FirstName" }}"#),
        "first_name HttpServer first-name"
    );
    assert_eq!(
        ok(r#"{{ snakecase "HTTPServer" }} {{ kebabcase "Bld4Floor3rd" }} {{ camelcase "GOLANG_IS_GREAT" }}"#),
        "http_server bld4-floor-3rd GolangIsGreat"
    );
}

#[test]
fn fn_contains_quote_cat_replace_plural() {
    assert_eq!(ok(r#"{{ contains "cat" "catch" }} {{ hasPrefix "cat" "catch" }} {{ hasSuffix "ch" "catch" }}"#), "true true true");
    assert_eq!(ok(r#"{{ cat "hello" "beautiful" "world" }}|{{ cat "a" nil 2 1.5 (list 1 "b") }}"#), "hello beautiful world|a 2 1.5 [1 b]");
    assert_eq!(ok(r#"{{ squote 1.0 nil "x" }}"#), "'1' 'x'");
    assert_eq!(ok(r#"{{ "I Am Henry VIII" | replace " " "-" }}"#), "I-Am-Henry-VIII");
    assert_eq!(ok(r#"{{ len "ab" | plural "one anchovy" "many anchovies" }} {{ plural "one" "many" 1 }}"#), "many anchovies one");
    assert_eq!(ok(r#"{{ hello }}"#), "Hello!");
}

#[test]
fn fn_split_join_and_string_lists() {
    assert_eq!(ok(r#"{{ splitList "$" "foo$bar$baz" }} {{ splitList "" "abc" | len }} {{ splitList "," "" | len }}"#), "[foo bar baz] 3 1");
    assert_eq!(
        ok(
            r#"{{ $m := split "$" "foo$bar$baz" }}{{ $m._0 }}{{ $m._2 }} {{ $n := splitn "$" 2 "foo$bar$baz" }}{{ $n._1 }} {{ splitn "$" 0 "a$b" | len }}"#
        ),
        "foobaz bar$baz 0"
    );
    assert_eq!(
        ok(r#"{{ list "hello" "world" | join "_" }} {{ join "+" (list 1 2 3) }} {{ join "," (list "a" nil "b") }}"#),
        "hello_world 1+2+3 a,b"
    );
    assert_eq!(
        ok(r#"{{ toStrings (list 1 "a" 2.5) | join "," }} {{ sortAlpha (list "b" "C" "a" 10 9) }} {{ sortAlpha "x" }}"#),
        "1,a,2.5 [10 9 C a b] [x]"
    );
    assert_eq!(ok(r#"{{ toString 1.5 }} {{ toString nil }} {{ toString (dict "a" 1) }} {{ toString 1e6 }}"#), "1.5 <nil> map[a:1] 1e+06");
}

#[test]
fn fn_regex_family() {
    assert_eq!(
        ok(r#"{{ regexMatch "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[A-Za-z]{2,}$" "test@acme.com" }} {{ mustRegexMatch "^\\d+$" "٣" }}"#),
        "true false"
    );
    assert_eq!(
        ok(
            r#"{{ regexFindAll "[2,4,6,8]" "123456789" -1 }} {{ regexFindAll "[2,4,6,8]" "123456789" 2 }} {{ regexFindAll "a" "aaa" 0 | len }}"#
        ),
        "[2 4 6 8] [2 4] 0"
    );
    assert_eq!(ok(r#"{{ regexFind "[a-zA-Z][1-9]" "abcd1234" }}|{{ regexFind "z" "abc" }}|"#), "d1||");
    assert_eq!(
        ok(r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }} {{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}"#),
        "-W-xxW- -${1}-${1}-"
    );
    assert_eq!(
        ok(r#"{{ regexSplit "z+" "pizza" -1 }} {{ regexSplit "z+" "pizza" 1 }} {{ regexQuoteMeta "1.2.3" }}"#),
        "[pi a] [pizza] 1\\.2\\.3"
    );
}

#[test]
fn rejects_bad_string_arguments() {
    for (text, needle) in [
        (r#"{{ upper 3 }}"#, "argument 1 must be a string, got int"),
        (r#"{{ trimPrefix 1 "a" }}"#, "argument 1 must be a string"),
        (r#"{{ regexMatch "(" "a" }}"#, "invalid regular expression"),
        (r#"{{ mustRegexFind "[" "a" }}"#, "invalid regular expression"),
        (r#"{{ regexMatch "(a{1000}){1000}" "a" }}"#, "invalid regular expression"),
        (r#"{{ abbrev "5" "hello" }}"#, "must be an integer"),
        (r#"{{ indent 2.5 "x" }}"#, "must be an integer"),
    ] {
        let message = error_message(text);
        assert!(message.contains(needle), "{text}: {message}");
    }
    assert!(matches!(failure(r#"{{ trim "a" "b" }}"#), TemplateError::Execution { .. }));
}

#[test]
fn a_call_with_too_few_arguments_is_an_argument_error() {
    for text in [r#"{{ indent }}"#, r#"{{ indent 2 }}"#, r#"{{ abbrev }}"#, r#"{{ regexSplit "z" }}"#, r#"{{ date }}"#] {
        let message = error_message(text);
        assert!(message.contains("wrong number of arguments"), "{text}: {message}");
    }
}

#[test]
fn rejects_oversized_string_results() {
    for (text, function) in [
        (r#"{{ repeat 99999999999 "ab" }}"#, "repeat"),
        (r#"{{ wrapWith 1 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" (repeat 2000000 "a ") }}"#, "wrapWith"),
        (r#"{{ splitList "" (repeat 2000000 "a") }}"#, "splitList"),
        (r#"{{ regexReplaceAll "" (repeat 4000 "a") (repeat 5000 "b") }}"#, "regexReplaceAll"),
    ] {
        let message = error_message(text);
        assert!(message.contains(&format!("error calling {function}:")) && message.contains("limit of a value"), "{function}: {message}");
    }
}
