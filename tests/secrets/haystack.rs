//! Searching texts for secret material: named needles, matched in a text and in whatever
//! its base64 runs decode to (a report envelope carries its payload base64-encoded, a
//! Secret its data), a few levels deep. Also where the needles come from: a kubeconfig's
//! tokens and a PEM key's body.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// A base64 run shorter than this decodes to too little to hide a needle worth finding.
const MIN_RUN: usize = 16;
/// Base64 within base64 within base64 (a payload in an envelope in a file) and no deeper.
const DEPTH: usize = 3;

#[derive(Default)]
pub struct Needles(Vec<(String, String)>);

impl Needles {
    pub fn add(&mut self, name: &str, value: &str) {
        assert!(value.len() >= 8, "needle {name:?} is too short to search for");
        self.0.push((name.to_string(), value.to_string()));
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The names of the needles in `text` or in what its base64 runs decode to.
    pub fn found_in(&self, text: &str) -> Vec<String> {
        let mut texts = vec![text.to_string()];
        let mut layer = vec![text.to_string()];
        for _ in 0..DEPTH {
            layer = layer.iter().flat_map(|t| decoded_runs(t)).collect();
            texts.extend(layer.iter().cloned());
        }
        self.0.iter().filter(|(_, v)| texts.iter().any(|t| t.contains(v.as_str()))).map(|(n, _)| n.clone()).collect()
    }
}

/// The UTF-8 texts that the base64 runs of `text` decode to.
fn decoded_runs(text: &str) -> Vec<String> {
    let is_b64 = |c: char| c.is_ascii_alphanumeric() || "+/=-_".contains(c);
    text.split(|c: char| !is_b64(c))
        .filter(|run| run.len() >= MIN_RUN)
        .filter_map(|run| STANDARD.decode(run).or_else(|_| URL_SAFE.decode(run)).ok())
        .filter_map(|bytes| String::from_utf8(bytes).ok())
        .collect()
}

/// The bearer tokens of the kubeconfig at `path` (`users[].user.token`).
pub fn kubeconfig_tokens(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let config: serde_json::Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let users = config["users"].as_array().cloned().unwrap_or_default();
    let tokens: Vec<String> = users.iter().filter_map(|u| u["user"]["token"].as_str().map(str::to_string)).collect();
    assert!(!tokens.is_empty(), "{path} has no token: the test would search for nothing");
    tokens
}

/// The base64 body of a PEM block, on one line: any log of the key would hold it.
pub fn pem_body(pem: &str) -> String {
    pem.lines().filter(|l| !l.starts_with("-----")).collect()
}
