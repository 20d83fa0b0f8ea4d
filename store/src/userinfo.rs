//! A store URL with its credentials taken out: what messages and the Git cache directory
//! name use, and the `user:pass@` that is scrubbed from libgit2's messages.

/// The URL without `user:pass@`, and that `user:pass@` if there was one.
pub(crate) fn redact(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_string(), None) };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => (format!("{scheme}://{}", &rest[at + 1..]), Some(rest[..=at].to_string())),
        None => (url.to_string(), None),
    }
}
