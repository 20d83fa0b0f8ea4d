//! URLs as Airlock writes them: without what may hold a secret. A profile's source URL
//! (a `remoteURL`, a Helm `repositoryURL`, a Git repository) may carry a login or a token
//! in its user information or query; whatever Airlock writes (bundles, signed failure
//! messages, object annotations, reports, logs) is read by everyone with access to the
//! store or the cluster, so it names the URL only as [`redact`] gives it.

/// `url` without its user information, query and fragment.
pub fn redact(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let host = rest[..authority_end].rsplit_once('@').map_or(&rest[..authority_end], |(_, host)| host);
            format!("{scheme}://{host}{}", &rest[authority_end..])
        }
        None => url.to_string(),
    }
}

/// A tool's `message` about `url` (git's, helm's), with every secret `url` carries taken
/// out: the URL itself as [`redact`] shows it, then its user information and query wherever
/// the tool quoted them on their own, as in an index URL built from the repository's.
pub fn scrub(message: &str, url: &str) -> String {
    let mut message = message.replace(url, &redact(url));
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if let Some((user, _)) = authority.rsplit_once('@').filter(|(user, _)| !user.is_empty()) {
        message = message.replace(&format!("{user}@"), "").replace(user, "***");
    }
    if let Some(start) = url.find(['?', '#']) {
        let secret = &url[start + 1..];
        for part in secret.split(['&', '#']).filter(|p| !p.is_empty()) {
            message = message.replace(part, "***");
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_a_url_without_user_query_or_fragment() {
        for (url, shown) in [
            ("https://u:p@example.com/a/x.yaml?sig=1#f", "https://example.com/a/x.yaml"),
            ("https://u:p@ss@example.com/a", "https://example.com/a"),
            ("oci://127.0.0.1:5000/app:v1", "oci://127.0.0.1:5000/app:v1"),
            ("https://example.com/a@b", "https://example.com/a@b"),
            ("https://example.com?token=t", "https://example.com"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn scrubs_what_a_tool_quotes_of_a_url() {
        let url = "https://ops:s3cret@charts.example/stable?token=t0k&x=1";
        let quoted = "looks like \"https://ops:s3cret@charts.example/stable/index.yaml?token=t0k&x=1\" is not a \
                      valid chart repository; ops:s3cret rejected; ";
        let scrubbed = scrub(quoted, url);
        for secret in ["s3cret", "t0k", "ops:", "x=1"] {
            assert!(!scrubbed.contains(secret), "{secret} in {scrubbed}");
        }
        assert!(scrubbed.contains("https://charts.example/stable/index.yaml"), "{scrubbed}");
        assert_eq!(scrub("connection refused", "http://127.0.0.1:1/x.git"), "connection refused");
    }
}
