//! Sprig's `semver` and `semverCompare`, with Masterminds/semver v3's rules: versions may
//! drop the minor or patch and start with `v`; constraints are `,`- or space-separated
//! ANDs of `||`-separated ORs over `=`, `!=`, `>`, `<`, `>=`, `<=`, `~`, `~>` and `^`,
//! with `x`/`*` wildcards and `A - B` ranges; a pre-release version matches only a
//! constraint group that names a pre-release itself.
//!
//! Departure: Go's `semver` returns a `*Version` whose methods a template calls
//! (`.Major`); here it is a dictionary with the same names (`Major`, `Minor`, `Patch`,
//! `Prerelease`, `Metadata`, `Original`), so `.Compare` and printing the version whole
//! are not available.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use gotmpl::Value;
use regex::Regex;

use super::args::{Call, Func, failure, map, str_arg, table, text};

const VERSION: &str = r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const CONSTRAINT_VERSION: &str =
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPERATORS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

struct Patterns {
    version: Regex,
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    let compile = |p: String| Regex::new(&p).expect("the semver patterns are fixed and valid");
    let (ops, cv) = (OPERATORS, CONSTRAINT_VERSION);
    Patterns {
        version: compile(format!("^{VERSION}$")),
        constraint: compile(format!(r"^\s*({ops})\s*({cv})\s*$")),
        range: compile(format!(r"\s*({cv})\s+-\s+({cv})\s*")),
        find: compile(format!(r"({ops})\s*({cv})")),
        valid: compile(format!(r"^(\s*({ops})\s*({cv})\s*)((?:\s+|,\s*)({ops})\s*({cv})\s*)*$")),
    }
});

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["semver"], |a| {
            let v = Version::parse(str_arg("semver", a, 1, 0)?).map_err(|e| failure("semver", e))?;
            Ok(v.to_value())
        }),
        (&["semverCompare"], semver_compare),
    ])
}

fn semver_compare(args: &[Value]) -> Call {
    let (constraint, version) = (str_arg("semverCompare", args, 2, 0)?, str_arg("semverCompare", args, 2, 1)?);
    let constraints = Constraints::parse(constraint).map_err(|e| failure("semverCompare", e))?;
    let version = Version::parse(version).map_err(|e| failure("semverCompare", e))?;
    Ok(Value::Bool(constraints.check(&version)))
}

#[derive(Debug, Clone)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

impl Version {
    /// Masterminds' `NewVersion`.
    fn parse(s: &str) -> Result<Self, String> {
        let invalid = || "Invalid Semantic Version".to_string();
        let m = PATTERNS.version.captures(s).ok_or_else(invalid)?;
        let number = |i: usize| -> Result<u64, String> {
            m.get(i)
                .map_or(Ok(0), |g| g.as_str().trim_start_matches('.').parse().map_err(|e| format!("Error parsing version segment: {e}")))
        };
        let pre = m.get(5).map_or("", |g| g.as_str()).to_string();
        for part in pre.split('.').filter(|_| !pre.is_empty()) {
            if part.len() > 1 && part.starts_with('0') && part.bytes().all(|b| b.is_ascii_digit()) {
                return Err("Version segment starts with 0".into());
            }
        }
        Ok(Self {
            major: number(1)?,
            minor: number(2)?,
            patch: number(3)?,
            pre,
            metadata: m.get(8).map_or("", |g| g.as_str()).into(),
            original: s.into(),
        })
    }

    fn to_value(&self) -> Value {
        let entries: BTreeMap<Arc<str>, Value> = [
            ("Major", Value::Int(self.major as i64)),
            ("Minor", Value::Int(self.minor as i64)),
            ("Patch", Value::Int(self.patch as i64)),
            ("Prerelease", text(self.pre.as_str())),
            ("Metadata", text(self.metadata.as_str())),
            ("Original", text(self.original.as_str())),
        ]
        .into_iter()
        .map(|(k, v)| (Arc::from(k), v))
        .collect();
        map(entries)
    }

    /// SemVer 2.0 precedence; build metadata does not count.
    fn compare(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| compare_prerelease(&self.pre, &other.pre))
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(p), Ok(q)) => p.cmp(&q),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

struct Constraint {
    operator: String,
    version: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

struct Constraints {
    /// ORs of ANDs, each AND group with whether it names a pre-release.
    groups: Vec<(Vec<Constraint>, bool)>,
}

fn is_wildcard(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

impl Constraints {
    /// Masterminds' `NewConstraint`.
    fn parse(s: &str) -> Result<Self, String> {
        let rewritten = PATTERNS.range.replace_all(s, ">= $1, <= $11 ").into_owned();
        let mut groups = Vec::new();
        for part in rewritten.split("||") {
            if !PATTERNS.valid.is_match(part) {
                return Err(format!("improper constraint: {part}"));
            }
            let found: Vec<&str> = PATTERNS.find.find_iter(part).map(|m| m.as_str()).collect();
            let found = if found.is_empty() { vec![part] } else { found };
            let constraints = found.into_iter().map(Constraint::parse).collect::<Result<Vec<_>, _>>()?;
            let names_pre = constraints.iter().any(|c| !c.version.pre.is_empty());
            groups.push((constraints, names_pre));
        }
        Ok(Self { groups })
    }

    fn check(&self, v: &Version) -> bool {
        self.groups.iter().any(|(group, names_pre)| group.iter().all(|c| c.check(v, *names_pre)))
    }
}

impl Constraint {
    fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            let version = Version::parse("0.0.0")?;
            return Ok(Self { operator: String::new(), version, dirty: true, minor_dirty: false, patch_dirty: false });
        }
        let m = PATTERNS.constraint.captures(s).ok_or_else(|| format!("improper constraint: {s}"))?;
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let (major, minor, patch, pre_suffix) = (group(3), group(4).trim_start_matches('.'), group(5).trim_start_matches('.'), group(6));
        let (text, dirty, minor_dirty, patch_dirty) = if is_wildcard(major) || major.is_empty() {
            (format!("0.0.0{pre_suffix}"), true, false, false)
        } else if is_wildcard(minor) || minor.is_empty() {
            (format!("{major}.0.0{pre_suffix}"), true, true, false)
        } else if is_wildcard(patch) || patch.is_empty() {
            (format!("{major}.{minor}.0{pre_suffix}"), true, false, true)
        } else {
            (group(2).to_string(), false, false, false)
        };
        let version = Version::parse(&text).map_err(|_| "constraint parser error".to_string())?;
        Ok(Self { operator: group(1).to_string(), version, dirty, minor_dirty, patch_dirty })
    }

    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        let c = &self.version;
        match self.operator.as_str() {
            "" | "=" if self.dirty => self.tilde(v),
            "" | "=" => v.compare(c) == Ordering::Equal,
            "!=" => self.not_equal(v),
            ">" => self.greater(v),
            "<" => v.compare(c) == Ordering::Less,
            ">=" | "=>" => v.compare(c) != Ordering::Less,
            "<=" | "=<" => self.less_or_equal(v),
            "~" | "~>" => self.tilde(v),
            _ => self.caret(v),
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if self.minor_dirty {
                return false;
            }
            if c.minor != v.minor {
                return true;
            }
            if self.patch_dirty {
                return (!v.pre.is_empty() || !c.pre.is_empty()) && compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
            }
        }
        v.compare(c) != Ordering::Equal
    }

    fn greater(&self, v: &Version) -> bool {
        let c = &self.version;
        if !self.dirty {
            return v.compare(c) == Ordering::Greater;
        }
        match v.major.cmp(&c.major) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal if self.minor_dirty => false,
            Ordering::Equal if self.patch_dirty => v.minor > c.minor,
            Ordering::Equal => v.compare(c) == Ordering::Greater,
        }
    }

    fn less_or_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if !self.dirty {
            return v.compare(c) != Ordering::Greater;
        }
        !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
    }

    /// `~1.2.3` is `>=1.2.3, <1.3.0`; `~1` is `>=1.0.0, <2.0.0`.
    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    /// `^1.2.3` is `>=1.2.3, <2.0.0`; `^0.2.3` is `>=0.2.3, <0.3.0`; `^0.0.3` is `=0.0.3`.
    fn caret(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(constraint: &str, version: &str) -> bool {
        Constraints::parse(constraint).unwrap().check(&Version::parse(version).unwrap())
    }

    #[test]
    fn constraints_follow_masterminds_semver() {
        for (constraint, version, expected) in [
            (">=1.2.3", "1.2.3", true),
            ("1.2.3", "1.2.4", false),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            ("^1.2.3", "1.9.0", true),
            ("^1.2.3", "2.0.0", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("1.2.x", "1.2.7", true),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2 - 1.4.5", "1.4.6", false),
            (">= 1.2, < 3.0.0 || >= 4.2.3", "4.2.3", true),
            (">= 1.2, < 3.0.0 || >= 4.2.3", "3.5.0", false),
            (">=1.2.3", "1.3.0-beta", false),
            (">=1.2.3-0", "1.3.0-beta", true),
            ("!=4.1", "4.1.5", false),
            (">11", "11.1.0", false),
            ("*", "0.0.1", true),
            ("<= 1.2", "1.2.9", true),
        ] {
            assert_eq!(matches(constraint, version), expected, "{constraint} against {version}");
        }
    }

    #[test]
    fn parses_loose_versions_and_refuses_bad_ones() {
        let v = Version::parse("v1.2-beta.1+build").unwrap();
        assert_eq!((v.major, v.minor, v.patch, v.pre.as_str(), v.metadata.as_str()), (1, 2, 0, "beta.1", "build"));
        for bad in ["", "1.2.3.4", "1.2.3-01", "a.b.c"] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
        assert!(Constraints::parse("> 1.2 <<").is_err());
    }
}
