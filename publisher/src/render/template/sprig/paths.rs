//! Sprig's path functions: `base`, `dir`, `clean`, `ext`, `isAbs` (Go's `path`), and
//! their `os*` twins (Go's `path/filepath`, which on Linux, where the publisher runs,
//! are the same functions).

use gotmpl::Value;

use super::args::{Func, str_arg, table, text};

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["base", "osBase"], |a| Ok(text(base(str_arg("base", a, 1, 0)?)))),
        (&["dir", "osDir"], |a| Ok(text(dir(str_arg("dir", a, 1, 0)?)))),
        (&["clean", "osClean"], |a| Ok(text(clean(str_arg("clean", a, 1, 0)?)))),
        (&["ext", "osExt"], |a| Ok(text(ext(str_arg("ext", a, 1, 0)?)))),
        (&["isAbs", "osIsAbs"], |a| Ok(Value::Bool(str_arg("isAbs", a, 1, 0)?.starts_with('/')))),
    ])
}

/// Go's `path.Base`: the last element, "." for "" and "/" for slashes only.
fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Dir`: everything before the last element, cleaned.
fn dir(p: &str) -> String {
    clean(&p[..p.rfind('/').map_or(0, |slash| slash + 1)])
}

/// Go's `path.Ext`: from the last dot of the last element.
fn ext(p: &str) -> &str {
    let last = &p[p.rfind('/').map_or(0, |slash| slash + 1)..];
    last.rfind('.').map_or("", |dot| &last[dot..])
}

/// Go's `path.Clean`: the shortest equivalent path, by purely lexical processing.
fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_go_path() {
        for (p, b, d, c, e) in [
            ("/a/b/c.txt", "c.txt", "/a/b", "/a/b/c.txt", ".txt"),
            ("a//b/../c/.", ".", "a/c", "a/c", "."),
            ("", ".", ".", ".", ""),
            ("/", "/", "/", "/", ""),
            ("../../x", "x", "../..", "../../x", ""),
            ("/../x/", "x", "/x", "/x", ""),
            ("a.b/c", "c", "a.b", "a.b/c", ""),
        ] {
            assert_eq!((base(p).as_str(), dir(p).as_str(), clean(p).as_str(), ext(p)), (b, d, c, e), "{p:?}");
        }
    }
}
