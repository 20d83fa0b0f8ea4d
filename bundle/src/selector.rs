//! Kubernetes label selectors as strings (`k8s.io/apimachinery/pkg/labels.Parse`), which
//! Sveltos and kustomize use for a patch target's labelSelector and annotationSelector,
//! and a drift exclusion's target names in the statement (spec 5.8): the publisher matches
//! patches with them, the puller the objects a drift exclusion applies to.
//!
//! The grammar is apimachinery's: requirements joined by commas, each `key`, `!key`,
//! `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>3` or `key<3`;
//! keys must be qualified names and values label values (so an annotation value with a
//! slash cannot be selected). The empty string selects everything.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Equals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Greater,
    Less,
    End,
}

impl Token {
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(s) => s,
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Open => "(",
            Token::Close => ")",
            Token::Comma => ",",
            Token::Greater => ">",
            Token::Less => "<",
            Token::End => "",
        }
    }
}

fn special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        "!" => Token::Bang,
        "!=" => Token::NotEquals,
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        "(" => Token::Open,
        ")" => Token::Close,
        "," => Token::Comma,
        ">" => Token::Greater,
        "<" => Token::Less,
        _ => return None,
    })
}

/// apimachinery's lexer: the longest symbol, or a run of other characters.
fn lex(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
            i += 1;
        }
        if i >= chars.len() || chars[i] == '\0' {
            tokens.push(Token::End);
            return tokens;
        }
        let start = i;
        if special(chars[i]) {
            // The longest symbol: every special character is one, `!=` and `==` are two.
            let pair: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            match symbol(&pair).filter(|_| pair.chars().count() == 2) {
                Some(token) => {
                    tokens.push(token);
                    i += 2;
                }
                None => {
                    tokens.push(symbol(&chars[i].to_string()).expect("a special character is a symbol"));
                    i += 1;
                }
            }
        } else {
            while i < chars.len() && !special(chars[i]) && !matches!(chars[i], ' ' | '\t' | '\r' | '\n' | '\0') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
        }
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    /// The next token; where values are read, `in` and `notin` are identifiers.
    fn peek(&self, values: bool) -> Token {
        let token = self.tokens[self.at.min(self.tokens.len() - 1)].clone();
        match token {
            Token::In | Token::NotIn if values => Token::Identifier(token.literal().to_string()),
            other => other,
        }
    }

    fn next(&mut self, values: bool) -> Token {
        let token = self.peek(values);
        self.at += 1;
        token
    }
}

/// Parses a selector string.
pub fn parse(input: &str) -> Result<Selector, String> {
    let mut p = Parser { tokens: lex(input), at: 0 };
    let mut requirements = Vec::new();
    loop {
        match p.peek(true) {
            Token::Identifier(_) | Token::Bang => {
                requirements.push(requirement(&mut p).map_err(|e| format!("unable to parse requirement: {e}"))?);
                match p.next(true) {
                    Token::End => return Ok(Selector(requirements)),
                    Token::Comma => {
                        let after = p.peek(true);
                        if !matches!(after, Token::Identifier(_) | Token::Bang) {
                            return Err(format!("found '{}', expected: identifier after ','", after.literal()));
                        }
                    }
                    other => return Err(format!("found '{}', expected: ',' or 'end of string'", other.literal())),
                }
            }
            Token::End => return Ok(Selector(requirements)),
            other => return Err(format!("found '{}', expected: !, identifier, or 'end of string'", other.literal())),
        }
    }
}

fn requirement(p: &mut Parser) -> Result<Requirement, String> {
    let mut token = p.next(true);
    let absent = token == Token::Bang;
    if absent {
        token = p.next(true);
    }
    let Token::Identifier(key) = token else {
        return Err(format!("found '{}', expected: identifier", token.literal()));
    };
    check_key(&key)?;
    if absent || matches!(p.peek(true), Token::End | Token::Comma) {
        let op = if absent { Op::DoesNotExist } else { Op::Exists };
        return Ok(Requirement { key, op, values: Vec::new() });
    }
    let op = match p.next(false) {
        Token::In => Op::In,
        Token::NotIn => Op::NotIn,
        Token::Equals | Token::DoubleEquals => Op::Equals,
        Token::NotEquals => Op::NotEquals,
        Token::Greater => Op::GreaterThan,
        Token::Less => Op::LessThan,
        other => return Err(format!("found '{}', expected: in, notin, =, ==, !=, gt, lt", other.literal())),
    };
    let mut values = if matches!(op, Op::In | Op::NotIn) { set_values(p)? } else { exact_value(p)? };
    values.sort();
    values.dedup();
    match op {
        Op::In | Op::NotIn if values.is_empty() => return Err("for 'in', 'notin' operators, values set can't be empty".into()),
        Op::GreaterThan | Op::LessThan if values.iter().any(|v| v.parse::<i64>().is_err()) => {
            return Err("for 'Gt', 'Lt' operators, the value must be an integer".into());
        }
        _ => {}
    }
    values.iter().try_for_each(|v| check_value(v))?;
    Ok(Requirement { key, op, values })
}

/// `(a, b)`, where `()`, `(,` and `,)` stand for the empty value.
fn set_values(p: &mut Parser) -> Result<Vec<String>, String> {
    let open = p.next(true);
    if open != Token::Open {
        return Err(format!("found '{}' expected: '('", open.literal()));
    }
    match p.peek(true) {
        Token::Close => {
            p.next(true);
            return Ok(vec![String::new()]);
        }
        Token::Identifier(_) | Token::Comma => {}
        other => return Err(format!("found '{}', expected: ',', ')' or identifier", other.literal())),
    }
    let mut values = Vec::new();
    loop {
        match p.next(true) {
            Token::Identifier(value) => {
                values.push(value);
                match p.peek(true) {
                    Token::Comma => {}
                    Token::Close => break,
                    other => return Err(format!("found '{}', expected: ',' or ')'", other.literal())),
                }
            }
            Token::Comma => {
                if values.is_empty() {
                    values.push(String::new());
                }
                match p.peek(true) {
                    Token::Close => {
                        values.push(String::new());
                        break;
                    }
                    Token::Comma => {
                        p.next(true);
                        values.push(String::new());
                    }
                    _ => {}
                }
            }
            other => return Err(format!("found '{}', expected: ',', or identifier", other.literal())),
        }
    }
    let close = p.next(true);
    if close != Token::Close {
        return Err(format!("found '{}', expected: ')'", close.literal()));
    }
    Ok(values)
}

fn exact_value(p: &mut Parser) -> Result<Vec<String>, String> {
    match p.peek(true) {
        Token::End | Token::Comma => Ok(vec![String::new()]),
        _ => match p.next(true) {
            Token::Identifier(value) => Ok(vec![value]),
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        },
    }
}

/// A qualified name: an optional DNS-subdomain prefix and `/`, then up to 63 of
/// `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => (None, name),
        [prefix, name] => (Some(prefix), name),
        _ => return Err(format!("invalid label key {key:?}: at most one '/'")),
    };
    if let Some(prefix) = prefix {
        let label = |l: &str| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if prefix.is_empty() || prefix.len() > 253 || !prefix.split('.').all(label) {
            return Err(format!("invalid label key {key:?}: the prefix must be a DNS subdomain"));
        }
    }
    if name.is_empty() || !label_text(name) {
        return Err(format!("invalid label key {key:?}: the name must be a label value of 1 to 63 characters"));
    }
    Ok(())
}

fn check_value(value: &str) -> Result<(), String> {
    if value.is_empty() || label_text(value) {
        Ok(())
    } else {
        Err(format!("invalid label value {value:?}: at most 63 of [A-Za-z0-9_.-], alphanumeric at both ends"))
    }
}

fn label_text(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() <= 63
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

impl Selector {
    /// Whether a set of labels (or annotations) satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| {
            let value = labels.get(&r.key);
            let has = |v: &String| r.values.contains(v);
            match r.op {
                Op::In | Op::Equals => value.is_some_and(has),
                Op::NotIn | Op::NotEquals => !value.is_some_and(has),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::GreaterThan | Op::LessThan => {
                    let (Some(actual), [wanted]) = (value.and_then(|v| v.parse::<i64>().ok()), &r.values[..]) else {
                        return false;
                    };
                    let wanted: i64 = wanted.parse().unwrap_or_default();
                    if r.op == Op::GreaterThan { actual > wanted } else { actual < wanted }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_operator_matches_as_apimachinery_does() {
        let set = labels(&[("env", "prod"), ("tier", "web"), ("n", "5")]);
        for (selector, expected) in [
            ("", true),
            ("env=prod", true),
            ("env==prod", true),
            ("env!=prod", false),
            ("missing!=x", true),
            ("env in (prod, staging)", true),
            ("env notin (prod)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("n>4", true),
            ("n<5", false),
            ("env=prod,tier=web", true),
            ("env=prod,tier=api", false),
            ("in in (notin)", false),
        ] {
            assert_eq!(parse(selector).unwrap().matches(&set), expected, "{selector}");
        }
    }

    #[test]
    fn rejects_what_apimachinery_rejects() {
        for selector in ["=x", "env in prod", "env in ()x", "env>x", "a/b/c=1", "env=a/b", "env,", "!env=x", "-bad=1"] {
            let parsed = parse(selector);
            assert!(parsed.is_err(), "{selector} parsed as {parsed:?}");
        }
        assert!(parse("env=").unwrap().matches(&labels(&[("env", "")])), "an empty value is a value");
    }
}
