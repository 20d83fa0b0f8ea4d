//! Encrypted files (spec 2.7): their part of step 6, that the statement describes them
//! consistently, and step 14, decrypting them with the puller's identities once every part
//! has passed steps 11-13. A plaintext exists only in memory, and only after the
//! signature, cluster and freshness checks accepted the statement that signs its digest.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::error::VerifyError;
use crate::age::{self, Identity, Recipient};
use crate::content::ContentError;
use crate::digest::Digest;
use crate::limits::Limits;
use crate::path::is_sealed;
use crate::statement::{FileEntry, Predicate};

/// Step 6 for one file: an encrypted file has the `.age` suffix and its plaintext's size
/// and digest, a file in clear neither. Returns whether the file is encrypted.
pub(super) fn check_file(f: &FileEntry, limits: &Limits) -> Result<bool, VerifyError> {
    let Some(plaintext) = &f.plaintext else {
        return if is_sealed(&f.path) { Err(ContentError::Sealing { path: f.path.clone() }.into()) } else { Ok(false) };
    };
    if !is_sealed(&f.path) {
        return Err(ContentError::Sealing { path: f.path.clone() }.into());
    }
    if plaintext.size > limits.file_bytes {
        return Err(ContentError::FileTooLarge { path: f.path.clone(), size: plaintext.size, limit: limits.file_bytes }.into());
    }
    Digest::from_hex(&plaintext.sha256).map_err(|e| VerifyError::BadField(format!("file {:?}: plaintext: {e}", f.path)))?;
    Ok(true)
}

/// Step 6 for the predicate's `recipients`: present exactly when a file is encrypted, at
/// most the limit, each a valid age recipient, none twice.
pub(super) fn check_recipients(p: &Predicate, sealed: bool, limits: &Limits) -> Result<(), VerifyError> {
    let bad = |m: String| Err(VerifyError::BadField(format!("recipients: {m}")));
    let Some(recipients) = &p.settings.recipients else {
        return if sealed { bad("absent, but files are encrypted".into()) } else { Ok(()) };
    };
    if !sealed {
        return bad("present, but no file is encrypted".into());
    }
    if recipients.is_empty() || recipients.len() > limits.recipients {
        return bad(format!("{} entries, expected 1 to {}", recipients.len(), limits.recipients));
    }
    let mut seen = BTreeSet::new();
    for text in recipients {
        let recipient: Recipient = text.parse().map_err(|e| VerifyError::BadField(format!("recipients: {text:?}: {e}")))?;
        if !seen.insert(recipient) {
            return bad(format!("{text:?} is listed twice"));
        }
    }
    Ok(())
}

/// Step 14: every encrypted file of `files` replaced by its plaintext, checked against
/// the size and digest the statement signs. `identities` are the puller's; one of them
/// must be for a recipient the statement lists.
pub(super) fn decrypt(
    predicate: &Predicate,
    files: Vec<(String, Bytes)>,
    identities: &[Identity],
    limits: &Limits,
) -> Result<Vec<(String, Bytes)>, VerifyError> {
    let Some(listed) = &predicate.settings.recipients else {
        return Ok(files);
    };
    if identities.is_empty() {
        return Err(VerifyError::NoIdentity { listed: listed.clone() });
    }
    let ours: Vec<String> = identities.iter().map(|i| i.recipient().to_string()).collect();
    if !ours.iter().any(|own| listed.contains(own)) {
        return Err(VerifyError::NotARecipient { listed: listed.clone(), own: ours });
    }
    let signed = &predicate.files;
    let mut opener = age::Opener::new(identities);
    files
        .into_iter()
        .map(|(path, bytes)| {
            let Some(plaintext) = signed.binary_search_by(|f| f.path.as_str().cmp(&path)).ok().and_then(|i| signed[i].plaintext.as_ref())
            else {
                return Ok((path, bytes));
            };
            let opened = opener.open(&bytes, limits.file_bytes).map_err(|source| VerifyError::Decrypt { path: path.clone(), source })?;
            if opened.len() as u64 != plaintext.size || Digest::of(&opened).hex() != plaintext.sha256 {
                return Err(VerifyError::PlaintextMismatch { path });
            }
            Ok((path, Bytes::from(opened)))
        })
        .collect()
}
