//! Sprig's `urlParse` and `urlJoin`, with Go's `net/url` rules for splitting a URL into
//! scheme, userinfo, host, path, query and fragment, and for escaping them again. (Go's
//! builtin `urlquery` comes with the template engine.)

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::args::{Call, Func, failure, map, map_at, str_arg, table, text, want};

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[(&["urlParse"], url_parse), (&["urlJoin"], url_join)])
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Host,
    UserPassword,
    Fragment,
}

/// Sprig's `urlParse URL`: a dictionary of the parts Go's `url.Parse` finds.
fn url_parse(args: &[Value]) -> Call {
    let raw = str_arg("urlParse", args, 1, 0)?;
    let url = parse(raw).map_err(|why| failure("urlParse", format!("unable to parse url: {why}")))?;
    let hostname = hostname(&url.host).to_string();
    let entries: BTreeMap<Arc<str>, Value> = [
        ("scheme", url.scheme),
        ("host", url.host),
        ("hostname", hostname),
        ("path", url.path),
        ("query", url.query),
        ("opaque", url.opaque),
        ("fragment", url.fragment),
        ("userinfo", url.user.map(|u| u.escaped()).unwrap_or_default()),
    ]
    .into_iter()
    .map(|(k, v)| (Arc::from(k), text(v)))
    .collect();
    Ok(map(entries))
}

/// Sprig's `urlJoin DICT`: the URL Go's `url.URL.String` writes for those parts.
fn url_join(args: &[Value]) -> Call {
    want("urlJoin", args, 1)?;
    let d = map_at("urlJoin", args, 0)?;
    let get = |key: &str| match d.get(key) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.to_string()),
        Some(other) => {
            Err(failure("urlJoin", format!("unable to parse {key} key, must be of type string, but {} found", other.type_name())))
        }
    };
    let userinfo = get("userinfo")?;
    let user = if userinfo.is_empty() {
        None
    } else {
        parse(&format!("proto://{userinfo}@host"))
            .map_err(|why| failure("urlJoin", format!("unable to parse userinfo in dict: {why}")))?
            .user
    };
    let url = Url {
        scheme: get("scheme")?,
        opaque: get("opaque")?,
        user,
        host: get("host")?,
        path: get("path")?,
        query: get("query")?,
        fragment: get("fragment")?,
    };
    Ok(text(url.to_string()))
}

#[derive(Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<User>,
    host: String,
    path: String,
    query: String,
    fragment: String,
}

struct User {
    name: String,
    password: Option<String>,
}

impl User {
    fn escaped(&self) -> String {
        let name = escape(&self.name, Part::UserPassword);
        match &self.password {
            Some(password) => format!("{name}:{}", escape(password, Part::UserPassword)),
            None => name,
        }
    }
}

/// Go's `url.Parse`.
fn parse(raw: &str) -> Result<Url, String> {
    let (rest, fragment) = raw.split_once('#').map_or((raw, None), |(r, f)| (r, Some(f)));
    let mut url = Url { fragment: fragment.map(|f| unescape(f, Part::Fragment)).transpose()?.unwrap_or_default(), ..Url::default() };
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if rest == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, rest) = scheme(rest)?;
    url.scheme = scheme.to_ascii_lowercase();
    let rest = match rest.split_once('?') {
        Some((before, query)) => {
            url.query = query.to_string();
            before
        }
        None => rest,
    };
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, remainder) = after.find('/').map_or((after, ""), |slash| (&after[..slash], &after[slash..]));
        let (user, host) = authority_parts(authority)?;
        url.user = user;
        url.host = host;
        path = remainder;
    }
    url.path = unescape(path, Part::Path)?;
    Ok(url)
}

/// The scheme before the first `:`, if the text starts with one.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn authority_parts(authority: &str) -> Result<(Option<User>, String), String> {
    let Some(at) = authority.rfind('@') else { return Ok((None, host(authority)?)) };
    let host = host(&authority[at + 1..])?;
    let userinfo = &authority[..at];
    if !userinfo.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b)) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        Some((name, password)) => {
            User { name: unescape(name, Part::UserPassword)?, password: Some(unescape(password, Part::UserPassword)?) }
        }
        None => User { name: unescape(userinfo, Part::UserPassword)?, password: None },
    };
    Ok((Some(user), host))
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

fn host(host: &str) -> Result<String, String> {
    let port_from =
        if host.starts_with('[') { host.rfind(']').ok_or("missing ']' in host")? + 1 } else { host.rfind(':').unwrap_or(host.len()) };
    if !valid_optional_port(&host[port_from..]) {
        return Err(format!("invalid port {:?} after host", &host[port_from..]));
    }
    unescape(host, Part::Host)
}

/// Go's `url.URL.Hostname`: the host without its port and IPv6 brackets.
fn hostname(host: &str) -> &str {
    let host = match host.rfind(':') {
        Some(colon) if valid_optional_port(&host[colon..]) => &host[..colon],
        _ => host,
    };
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host)
}

/// Go's `shouldEscape` for one byte of a URL part.
fn should_escape(c: u8, part: Part) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if part == Part::Host && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match part {
            Part::Path => c == b'?',
            Part::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Part::Fragment => false,
            Part::Host => true,
        },
        b'!' | b'(' | b')' | b'*' if part == Part::Fragment => false,
        _ => true,
    }
}

fn escape(s: &str, part: Part) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if should_escape(b, part) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

fn unescape(s: &str, part: Part) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escape = s.get(i..i + 3).ok_or_else(|| format!("invalid URL escape {:?}", &s[i..]))?;
                let value = u8::from_str_radix(&escape[1..], 16).map_err(|_| format!("invalid URL escape {escape:?}"))?;
                if part == Part::Host && value < 0x80 && escape != "%25" {
                    return Err(format!("invalid URL escape {escape:?}"));
                }
                out.push(value);
                i += 3;
            }
            b if part == Part::Host && b < 0x80 && should_escape(b, part) => {
                return Err(format!("invalid character {:?} in host name", char::from(b)));
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "the unescaped URL is not UTF-8 text".to_string())
}

impl std::fmt::Display for Url {
    /// Go's `url.URL.String`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some(user) = &self.user {
                    out.push_str(&user.escaped());
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Part::Host));
            }
            let path = escape(&self.path, Part::Path);
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|segment| segment.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if !self.query.is_empty() {
            out.push('?');
            out.push_str(&self.query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&escape(&self.fragment, Part::Fragment));
        }
        f.write_str(&out)
    }
}
