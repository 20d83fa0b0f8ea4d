//! Random functions: the same entropy and inputs render the same bytes (no re-publish),
//! another context renders fresh values, and without entropy they fail the render.

use base64::Engine as _;

use super::*;

/// Space-separated: `randAscii` (which may draw spaces) is tested on its own.
const RANDOM: &str = r#"{{ randAlphaNum 16 }} {{ randAlpha 8 }} {{ randNumeric 6 }} {{ randBytes 12 }} {{ randInt 10 20 }} {{ shuffle "abcdefgh" }} {{ uuidv4 }}"#;

fn with(context: &str, text: &str) -> String {
    render_with(&SOURCE, text, &data(), &seeded_env(context)).unwrap_or_else(|err| panic!("{text:?} failed: {err}"))
}

#[test]
fn random_values_repeat_for_the_same_entropy_and_inputs() {
    let first = with("cluster-a", RANDOM);
    assert_eq!(with("cluster-a", RANDOM), first);
    // Through the per-thread compile cache as well as from a fresh compile.
    assert_eq!(with("cluster-a", &format!("{RANDOM}{{{{/* */}}}}")), first);
}

#[test]
fn random_values_change_with_the_context() {
    let a = with("cluster-a", RANDOM);
    let b = with("cluster-b", RANDOM);
    for (x, y) in a.split(' ').zip(b.split(' ')) {
        if x.len() > 2 {
            assert_ne!(x, y, "{a} vs {b}");
        }
    }
}

#[test]
fn random_values_have_sprigs_shapes() {
    let out = with("shapes", RANDOM);
    let parts: Vec<&str> = out.split(' ').collect();
    assert_eq!(parts.len(), 7, "{out}");
    assert!(parts[0].len() == 16 && parts[0].bytes().all(|b| b.is_ascii_alphanumeric()), "{}", parts[0]);
    assert!(parts[1].len() == 8 && parts[1].bytes().all(|b| b.is_ascii_alphabetic()), "{}", parts[1]);
    assert!(parts[2].len() == 6 && parts[2].bytes().all(|b| b.is_ascii_digit()), "{}", parts[2]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(parts[3]).map(|b| b.len()).ok(), Some(12));
    let int: i64 = parts[4].parse().unwrap();
    assert!((10..20).contains(&int), "{int}");
    let mut shuffled: Vec<char> = parts[5].chars().collect();
    shuffled.sort_unstable();
    assert_eq!(shuffled.into_iter().collect::<String>(), "abcdefgh");
    let uuid = parts[6];
    assert_eq!((uuid.len(), &uuid[14..15]), (36, "4"), "{uuid}");
    assert!(matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{uuid}");
    let ascii = with("shapes", "{{ randAscii 50 }}");
    assert!(ascii.len() == 50 && ascii.bytes().all(|b| (32..=126).contains(&b)), "{ascii}");
}

#[test]
fn draws_are_uniform_enough_to_use_every_symbol() {
    let digits = with("digits", "{{ randNumeric 2000 }}");
    for d in '0'..='9' {
        let share = digits.matches(d).count();
        assert!((120..=280).contains(&share), "{d} drawn {share} times of 2000");
    }
}

#[test]
fn rejects_random_functions_without_entropy() {
    for name in [
        "randAlphaNum 3",
        "randAlpha 3",
        "randNumeric 3",
        "randAscii 3",
        "randBytes 3",
        "randInt 1 2",
        "shuffle \"ab\"",
        "uuidv4",
        "bcrypt \"x\"",
        "genPrivateKey \"ecdsa\"",
        "genCA \"x\" 1",
        "encryptAES \"k\" \"v\"",
    ] {
        let function = name.split(' ').next().unwrap_or(name);
        let err = failure(&format!("{{{{ {name} }}}}"));
        assert_eq!(
            err,
            TemplateError::Unavailable { at: at(1, 4), function: function.into(), reason: Unavailable::WithoutEntropy },
            "{name}"
        );
        assert!(err.to_string().contains("no entropy source"), "{err}");
    }
}

#[test]
fn rejects_bad_random_arguments() {
    for (text, needle) in [
        ("{{ randInt 5 5 }}", "must exceed min"),
        ("{{ randAlpha -1 }}", "must not be negative"),
        ("{{ randAlphaNum 99999999999 }}", "limit of a value"),
        ("{{ randBytes 99999999999 }}", "limit of a value"),
    ] {
        let err = render_with(&SOURCE, text, &data(), &seeded_env("bad")).expect_err(text);
        assert!(matches!(&err, TemplateError::Execution { message, .. } if message.contains(needle)), "{text}: {err}");
    }
}
