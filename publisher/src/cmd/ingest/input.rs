//! Where `ingest` reads carried reports from (spec 14.6): a reports file made by
//! `airlock-puller export-reports` (a JSON array of report envelopes), or a directory of the
//! puller's `report-*.json` files. Every read is capped; each envelope keeps its exact bytes
//! and a name for messages (the file, or `FILE[index]`). Nothing here checks a signature.
//! Reports in a store (spec 14.7) are `online`'s.

use std::io::Read;
use std::path::Path;

use airlock_bundle::Limits;
use serde_json::value::RawValue;

/// A reports file holds many envelopes of at most `Limits::envelope_bytes` each; this caps
/// what one carried file may make the publisher read into memory.
pub const REPORTS_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Store references, which `online` reads instead.
const STORE_PREFIXES: [&str; 5] = ["oci://", "oci+http://", "oci-layout:", "oci-archive:", "git+"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: larger than {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("{path}: not a reports file (a JSON array of report envelopes, from `airlock-puller export-reports`): {message}")]
    NotReports { path: String, message: String },
}

/// One report envelope as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The file it came from, `FILE[index]` inside a reports file, or the store and cluster.
    pub origin: String,
    pub bytes: Vec<u8>,
    /// The cluster whose place in a store it was read from (spec 14.4 step 5); `None` for
    /// carried files, which have no place.
    pub place: Option<airlock_bundle::ClusterId>,
}

/// Whether `from` names a store rather than a file or directory.
pub fn is_store(from: &str) -> bool {
    STORE_PREFIXES.iter().any(|p| from.starts_with(p))
}

/// Reads every report envelope under `from`, a file or directory.
pub fn read(from: &str, limits: &Limits) -> Result<Vec<Received>, InputError> {
    let path = Path::new(from);
    if path.is_dir() { read_dir(path, limits) } else { read_file(path) }
}

fn io(path: &Path, e: impl std::fmt::Display) -> InputError {
    InputError::Io { path: path.display().to_string(), message: e.to_string() }
}

/// The first `n` bytes of `path` (all of it when shorter).
fn read_at_most(path: &Path, n: u64) -> Result<Vec<u8>, InputError> {
    let file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut bytes = Vec::new();
    file.take(n).read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    Ok(bytes)
}

fn read_file(path: &Path) -> Result<Vec<Received>, InputError> {
    let bytes = read_at_most(path, REPORTS_FILE_BYTES + 1)?;
    if bytes.len() as u64 > REPORTS_FILE_BYTES {
        return Err(InputError::TooLarge { path: path.display().to_string(), limit: REPORTS_FILE_BYTES });
    }
    // Raw values keep each envelope's exact bytes: nothing is re-serialised before checking.
    let items: Vec<Box<RawValue>> =
        serde_json::from_slice(&bytes).map_err(|e| InputError::NotReports { path: path.display().to_string(), message: e.to_string() })?;
    Ok(items
        .into_iter()
        .enumerate()
        .map(|(i, raw)| Received { origin: format!("{}[{i}]", path.display()), bytes: raw.get().as_bytes().to_vec(), place: None })
        .collect())
}

fn read_dir(dir: &Path, limits: &Limits) -> Result<Vec<Received>, InputError> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // The puller writes through a temporary file and a rename; only finished reports match.
        if name.starts_with("report-") && name.ends_with(".json") && entry.file_type().map_err(|e| io(dir, e))?.is_file() {
            paths.push(entry.path());
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            // One byte over the envelope limit is enough for decoding to refuse it as too large.
            let bytes = read_at_most(&path, limits.envelope_bytes + 1)?;
            Ok(Received { origin: path.display().to_string(), bytes, place: None })
        })
        .collect()
}
