//! The cluster's age identities (bundles-format.md 2.7): a new one per registration, or the
//! one of `--age-identity-file` kept, plus earlier ones kept for a rotation
//! (`--previous-age-identity-file`). The current identity's recipient goes onto the
//! SveltosCluster, where `publish` finds what to encrypt the cluster's Secrets to; every
//! identity goes into the Secret the puller decrypts with, written as `age-keygen` writes
//! an identity file. Reading the files is `settings`' job; this module never logs or
//! prints a secret key.

use std::path::Path;

use airlock_bundle::age::{Identity, Recipient, parse_identities};
use anyhow::Context;
use jiff::Timestamp;

/// What `age-keygen` writes before an identity, and what we read back from a kept file.
const CREATED: &str = "# created: ";
const PUBLIC_KEY: &str = "# public key: ";

/// The identities the cluster's puller decrypts with, the current one first.
#[derive(Clone, PartialEq, Eq)]
pub struct AgeIdentities {
    current: Identity,
    /// When the current identity was made (RFC 3339): now for a new one, what the kept
    /// file says for a kept one, if it says.
    created: Option<String>,
    /// Earlier identities, kept so that bundles sealed to them still decrypt.
    previous: Vec<Identity>,
}

impl std::fmt::Debug for AgeIdentities {
    // By hand: recipients only, so no secret key reaches a log or a test failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let previous: Vec<Recipient> = self.previous.iter().map(Identity::recipient).collect();
        f.debug_struct("AgeIdentities").field("recipient", &self.current.recipient()).field("previous", &previous).finish()
    }
}

impl AgeIdentities {
    /// A new identity, made now.
    pub fn generate(now: Timestamp) -> AgeIdentities {
        let created = Timestamp::from_second(now.as_second()).unwrap_or(now).to_string();
        AgeIdentities { current: Identity::generate(), created: Some(created), previous: Vec::new() }
    }

    /// The identities of `text`, the identity file at `path`: its first is the current
    /// one, the others previous ones.
    pub fn kept(text: &str, path: &Path) -> anyhow::Result<AgeIdentities> {
        let mut identities = read(text, path)?.into_iter();
        let current = identities.next().expect("parse_identities returns at least one");
        // The creation time written above the first identity, as age-keygen puts it.
        let created = text
            .lines()
            .take_while(|l| !l.trim_start().starts_with("AGE-SECRET-KEY-"))
            .find_map(|l| l.trim().strip_prefix(CREATED))
            .filter(|t| t.parse::<Timestamp>().is_ok())
            .map(String::from);
        let mut kept = AgeIdentities { current, created, previous: Vec::new() };
        kept.add_previous(identities);
        Ok(kept)
    }

    /// Adds the identities of `text`, the identity file at `path`, as previous ones.
    pub fn keep_previous(&mut self, text: &str, path: &Path) -> anyhow::Result<()> {
        let identities = read(text, path)?;
        self.add_previous(identities);
        Ok(())
    }

    fn add_previous(&mut self, identities: impl IntoIterator<Item = Identity>) {
        for identity in identities {
            if identity != self.current && !self.previous.contains(&identity) {
                self.previous.push(identity);
            }
        }
    }

    /// The recipient bundles are sealed to from now on.
    pub fn recipient(&self) -> Recipient {
        self.current.recipient()
    }

    /// The recipients of the previous identities, oldest kept last.
    pub fn previous(&self) -> Vec<Recipient> {
        self.previous.iter().map(Identity::recipient).collect()
    }

    /// The identity file the puller reads: the current identity as `age-keygen` writes
    /// it, then each previous one under its own public key comment.
    pub fn file_text(&self) -> String {
        let mut text = String::new();
        if let Some(created) = &self.created {
            text.push_str(&format!("{CREATED}{created}\n"));
        }
        for (i, identity) in std::iter::once(&self.current).chain(&self.previous).enumerate() {
            if i == 1 {
                text.push_str("# previous identities, kept to decrypt what was sealed before a rotation\n");
            }
            text.push_str(&format!("{PUBLIC_KEY}{}\n{}\n", identity.recipient(), identity.to_secret_string()));
        }
        text
    }
}

/// The identities of an identity file, naming the file in any error (never its content).
fn read(text: &str, path: &Path) -> anyhow::Result<Vec<Identity>> {
    parse_identities(text).with_context(|| format!("age identity file {}", path.display()))
}
