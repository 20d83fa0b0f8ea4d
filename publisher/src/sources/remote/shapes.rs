//! The shapes a `remoteURL` body comes in, as Sveltos accepts them: a YAML or JSON
//! document, that document gzip-compressed, a tar, or a gzip-compressed tar of `.yaml`,
//! `.yml` and `.json` files. Entry point: [`files`], which turns a body into named texts.
//!
//! The shape is told by content, not by name or Content-Type: gzip by its magic bytes, tar
//! by the `ustar` magic that POSIX, GNU and pax writers all put in every header. A tar is
//! read in memory and never written to disk: only regular files are read (links,
//! directories and devices are skipped, so no path in it can point anywhere); files of
//! other extensions are skipped, and so are macOS's AppleDouble files and pax headers
//! written as files, as Sveltos's `isYAMLManifestEntry` skips them; the files come out
//! sorted by entry name, so the documents keep one order whatever order the archive was
//! written in.

use std::io::Read;

use super::error::RemoteError;
use super::limits::{MAX_INFLATED, MAX_TAR_ENTRIES};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const TAR_MAGIC: &[u8] = b"ustar";
const TAR_MAGIC_AT: usize = 257;
const EXTENSIONS: [&str; 3] = [".yaml", ".yml", ".json"];

/// The texts `body` holds, each with its name: `name` for a single document, each tar
/// file's entry name for a tar, sorted by it. `url` is for messages.
pub fn files(body: &[u8], name: &str, url: &str) -> Result<Vec<(String, String)>, RemoteError> {
    let inflated;
    let bytes = if body.starts_with(&GZIP_MAGIC) {
        inflated = inflate(body, url)?;
        &inflated[..]
    } else {
        body
    };
    if bytes.get(TAR_MAGIC_AT..TAR_MAGIC_AT + TAR_MAGIC.len()) == Some(TAR_MAGIC) {
        return tar_files(bytes, url);
    }
    Ok(vec![(name.to_string(), text(bytes.to_vec(), name, url)?)])
}

fn inflate(body: &[u8], url: &str) -> Result<Vec<u8>, RemoteError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(body).take(MAX_INFLATED + 1).read_to_end(&mut out).map_err(|e| RemoteError::Malformed {
        url: url.into(),
        what: "gzip".into(),
        message: e.to_string(),
    })?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(RemoteError::TooLarge { url: url.into(), what: "the inflated gzip stream".into(), limit: MAX_INFLATED });
    }
    Ok(out)
}

fn tar_files(bytes: &[u8], url: &str) -> Result<Vec<(String, String)>, RemoteError> {
    let malformed = |e: std::io::Error| RemoteError::Malformed { url: url.into(), what: "tar".into(), message: e.to_string() };
    let mut archive = tar::Archive::new(bytes);
    let mut out = Vec::new();
    for (count, entry) in archive.entries().map_err(malformed)?.enumerate() {
        if count == MAX_TAR_ENTRIES {
            return Err(RemoteError::TooMany { url: url.into(), what: "tar entries".into(), limit: MAX_TAR_ENTRIES });
        }
        let mut entry = entry.map_err(malformed)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if skipped_tar_entry(&name) || !EXTENSIONS.iter().any(|ext| name.to_ascii_lowercase().ends_with(ext)) {
            continue;
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(malformed)?;
        out.push((name.clone(), text(data, &name, url)?));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn text(bytes: Vec<u8>, name: &str, url: &str) -> Result<String, RemoteError> {
    String::from_utf8(bytes).map_err(|_| RemoteError::Malformed { url: url.into(), what: name.into(), message: "is not UTF-8 text".into() })
}

/// Whether Sveltos skips a tar entry of this name (`isSkippableTarEntry`): macOS's
/// AppleDouble files, which share their file's extension but hold binary metadata, and pax
/// headers that a writer stored as files.
pub fn skipped_tar_entry(name: &str) -> bool {
    let base = name.trim_end_matches('/').rsplit('/').next().unwrap_or(name);
    base.starts_with("._") || name.contains("PaxHeader")
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::io::Write;

    pub fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// A tar of `(type, name, text)` entries in the order given: a regular file holds
    /// the text, a link points to it.
    pub fn tar_of(entries: &[(tar::EntryType, &str, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for &(kind, name, text) in entries {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(kind);
            h.set_mode(0o644);
            if kind.is_file() {
                h.set_size(text.len() as u64);
                h.set_cksum();
                b.append_data(&mut h, name, text.as_bytes()).unwrap();
            } else {
                h.set_size(0);
                h.set_cksum();
                b.append_link(&mut h, name, text).unwrap();
            }
        }
        b.into_inner().unwrap()
    }

    fn files_of(names: &[(&str, &str)]) -> Vec<u8> {
        tar_of(&names.iter().map(|&(n, t)| (tar::EntryType::Regular, n, t)).collect::<Vec<_>>())
    }

    const DOC: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";

    #[test]
    fn reads_a_document_as_it_is_or_gzipped() {
        let want = vec![("x.yaml".to_string(), DOC.to_string())];
        assert_eq!(files(DOC.as_bytes(), "x.yaml", "u").unwrap(), want);
        assert_eq!(files(&gzip(DOC.as_bytes()), "x.yaml", "u").unwrap(), want);
        let json = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#;
        assert_eq!(files(json.as_bytes(), "x.json", "u").unwrap(), vec![("x.json".to_string(), json.to_string())]);
    }

    #[test]
    fn reads_a_tar_or_tar_gz_sorted_by_entry_name_skipping_other_files() {
        let tar = files_of(&[("z/b.yml", "b: 1\n"), ("README.md", "# no"), ("a.json", "{}"), ("c.YAML", "c: 1\n")]);
        let want: Vec<(String, String)> =
            [("a.json", "{}"), ("c.YAML", "c: 1\n"), ("z/b.yml", "b: 1\n")].iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
        assert_eq!(files(&tar, "x.tar", "u").unwrap(), want);
        assert_eq!(files(&gzip(&tar), "x.tar.gz", "u").unwrap(), want);
    }

    #[test]
    fn skips_apple_double_files_and_pax_headers_as_sveltos_does() {
        let tar = files_of(&[("._a.yaml", "\u{0}\u{5}"), ("d/._b.yml", "\u{0}"), ("PaxHeader/c.yaml", "path=c"), ("c.yaml", "c: 1\n")]);
        assert_eq!(files(&tar, "x", "u").unwrap(), vec![("c.yaml".to_string(), "c: 1\n".to_string())]);
    }

    #[test]
    fn skips_links_and_directories_in_a_tar() {
        use tar::EntryType::{Directory, Link, Regular, Symlink};
        let tar = tar_of(&[
            (Directory, "d/", "d"),
            (Symlink, "l.yaml", "/etc/passwd"),
            (Link, "h.yaml", "ok.yaml"),
            (Regular, "ok.yaml", "a: 1"),
        ]);
        assert_eq!(files(&tar, "x", "u").unwrap(), vec![("ok.yaml".to_string(), "a: 1".to_string())]);
    }

    #[test]
    fn rejects_text_that_is_not_utf8() {
        assert_eq!(
            files(&[0xff, 0xfe, b'a'], "x.yaml", "u"),
            Err(RemoteError::Malformed { url: "u".into(), what: "x.yaml".into(), message: "is not UTF-8 text".into() })
        );
    }

    #[test]
    fn rejects_a_broken_gzip_stream_at_every_length() {
        let gz = gzip(DOC.as_bytes());
        for len in 2..gz.len() - 8 {
            assert!(matches!(files(&gz[..len], "x", "u"), Err(RemoteError::Malformed { .. })), "{len}");
        }
    }

    #[test]
    fn rejects_a_gzip_bomb() {
        let bomb = gzip(&vec![b'a'; MAX_INFLATED as usize + 1]);
        assert_eq!(
            files(&bomb, "x", "u"),
            Err(RemoteError::TooLarge { url: "u".into(), what: "the inflated gzip stream".into(), limit: MAX_INFLATED })
        );
    }
}
