//! Git credentials kept outside the store URL (spec 2.6): a username and password for HTTP
//! basic auth, read from a file in git-credential-store format, so that they can be renewed
//! by replacing the file (a mounted Secret) while the URL in the puller's settings stays.
//!
//! The format is git's own (`git help credential-store`): one URL per line,
//! `scheme://user:password@host[:port][/path]`, user and password percent-encoded; the line
//! whose scheme and host match the store's URL applies, as git picks it. This module parses
//! and writes that text; it reads no file and talks to no server. [`GitStore::with_credentials`]
//! hands the result to libgit2.
//!
//! [`GitStore::with_credentials`]: crate::GitStore::with_credentials

use std::fmt;

use crate::userinfo::redact;

/// Why a git-credential-store text gave no credentials. No variant holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GitCredentialsError {
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("line {line}: {message}")]
    BadLine { line: usize, message: &'static str },
    #[error("no line for {origin}")]
    NoMatch { origin: String },
    #[error("{url:?} is not an http:// or https:// URL")]
    NotHttp { url: String },
}

/// A username and password for a Git server's HTTP basic auth.
#[derive(Clone, PartialEq, Eq)]
pub struct GitCredentials {
    pub(super) username: String,
    pub(super) password: String,
}

impl fmt::Debug for GitCredentials {
    // By hand, so the password never reaches a log or a test failure message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitCredentials").field("username", &self.username).finish_non_exhaustive()
    }
}

impl GitCredentials {
    /// `None` for an empty username or password: a server would refuse them anyway.
    pub fn new(username: &str, password: &str) -> Option<GitCredentials> {
        (!username.is_empty() && !password.is_empty()).then(|| GitCredentials { username: username.into(), password: password.into() })
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    /// The credentials of the line of `text` (git-credential-store format) for `url`'s
    /// scheme and host; the path of either is not compared, as git does by default.
    pub fn from_store_text(text: &[u8], url: &str) -> Result<GitCredentials, GitCredentialsError> {
        let wanted = origin(url).ok_or_else(|| GitCredentialsError::NotHttp { url: redact(url).0 })?;
        for (line, credentials) in parse_store_text(text)? {
            if line == wanted {
                return Ok(credentials);
            }
        }
        Err(GitCredentialsError::NoMatch { origin: wanted })
    }

    /// Checks that `text` is git-credential-store text with at least one line.
    pub fn check_store_text(text: &[u8]) -> Result<(), GitCredentialsError> {
        match parse_store_text(text)?.is_empty() {
            true => Err(GitCredentialsError::BadLine { line: 1, message: "no credentials" }),
            false => Ok(()),
        }
    }

    /// The git-credential-store line giving these credentials for `url`'s scheme and host.
    pub fn store_line(&self, url: &str) -> Result<String, GitCredentialsError> {
        let origin = origin(url).ok_or_else(|| GitCredentialsError::NotHttp { url: redact(url).0 })?;
        let (scheme, host) = origin.split_once("://").expect("an origin has a scheme");
        Ok(format!("{scheme}://{}:{}@{host}\n", encode(&self.username), encode(&self.password)))
    }
}

/// Every line of `text` as (origin, credentials), in order.
fn parse_store_text(text: &[u8]) -> Result<Vec<(String, GitCredentials)>, GitCredentialsError> {
    let text = std::str::from_utf8(text).map_err(|_| GitCredentialsError::NotUtf8)?;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |message| GitCredentialsError::BadLine { line: i + 1, message };
        let line = line.trim();
        let (scheme, rest) = line.split_once("://").ok_or(bad("not a URL"))?;
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        let (userinfo, host) = authority.rsplit_once('@').ok_or(bad("no user:password@ before the host"))?;
        let (user, password) = userinfo.split_once(':').ok_or(bad("no :password after the user"))?;
        let (user, password) = (decode(user).ok_or(bad("bad %-escape"))?, decode(password).ok_or(bad("bad %-escape"))?);
        let credentials = GitCredentials::new(&user, &password).ok_or(bad("empty user or password"))?;
        let origin = origin(&format!("{scheme}://{host}")).ok_or(bad("not an http:// or https:// URL with a host"))?;
        found.push((origin, credentials));
    }
    Ok(found)
}

/// `scheme://host[:port]` of an http(s) URL, host in lower case, without credentials.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    (["http", "https"].contains(&scheme.as_str()) && !host.is_empty()).then(|| format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// Percent-encodes all but RFC 3986's unreserved characters, as git does for this file.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => {
                let hex = [bytes.next()?, bytes.next()?];
                out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            _ => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_line_for_the_store_host_and_decodes_it() {
        let text = b"https://other:x@example.org\n\nhttp://edge%2D1:p%40ss%3Aw%2Frd@127.0.0.1:8418/ignored\n";
        let found = GitCredentials::from_store_text(text, "http://127.0.0.1:8418/fleet.git").unwrap();
        assert_eq!((found.username.as_str(), found.password.as_str()), ("edge-1", "p@ss:w/rd"));
        let other = GitCredentials::from_store_text(text, "https://EXAMPLE.org/r.git").unwrap();
        assert_eq!(other.username(), "other");
    }

    #[test]
    fn writes_a_line_it_reads_back() {
        let credentials = GitCredentials::new("edge 1", "p@ss:w/rd%\n").unwrap();
        let line = credentials.store_line("http://user:old@127.0.0.1:8418/fleet.git").unwrap();
        assert_eq!(line, "http://edge%201:p%40ss%3Aw%2Frd%25%0A@127.0.0.1:8418\n");
        assert_eq!(GitCredentials::from_store_text(line.as_bytes(), "http://127.0.0.1:8418/x.git"), Ok(credentials));
        assert!(GitCredentials::check_store_text(line.as_bytes()).is_ok());
    }

    #[test]
    fn rejects_bad_store_text_naming_the_line_never_the_password() {
        let url = "http://127.0.0.1:8418/fleet.git";
        let cases: [(&[u8], GitCredentialsError); 8] = [
            (b"\xff", GitCredentialsError::NotUtf8),
            (b"\nsecret-pw", GitCredentialsError::BadLine { line: 2, message: "not a URL" }),
            (b"http://127.0.0.1:8418", GitCredentialsError::BadLine { line: 1, message: "no user:password@ before the host" }),
            (b"http://user@127.0.0.1:8418", GitCredentialsError::BadLine { line: 1, message: "no :password after the user" }),
            (b"http://u:secret%zz@h", GitCredentialsError::BadLine { line: 1, message: "bad %-escape" }),
            (b"http://u:@h", GitCredentialsError::BadLine { line: 1, message: "empty user or password" }),
            (b"ssh://u:secret@h", GitCredentialsError::BadLine { line: 1, message: "not an http:// or https:// URL with a host" }),
            (b"http://u:secret@127.0.0.1:9999", GitCredentialsError::NoMatch { origin: "http://127.0.0.1:8418".into() }),
        ];
        for (text, want) in cases {
            let err = GitCredentials::from_store_text(text, url).unwrap_err();
            assert_eq!(err, want, "{}", String::from_utf8_lossy(text));
            assert!(!err.to_string().contains("secret"), "{err}");
        }
        assert_eq!(
            GitCredentials::from_store_text(b"http://u:p@h", "file:///srv/r.git"),
            Err(GitCredentialsError::NotHttp { url: "file:///srv/r.git".into() })
        );
        assert!(GitCredentials::check_store_text(b"\n").is_err(), "no line at all");
        assert!(!format!("{:?}", GitCredentials::new("u", "secret").unwrap()).contains("secret"));
    }
}
