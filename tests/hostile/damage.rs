//! Hostile cases about bytes that arrive broken, after a validly signed envelope: a
//! part's transport copy (spec 8.11-8.12), the tar inside it (8.13), and the store's own
//! files damaged after a good bundle was written (9.3-9.4).

use airlock_bundle::gzip;
use airlock_bundle::tar::write_canonical;
use airlock_e2e::hostile_site::{BASELINE, Site};
use airlock_store::StoreRef;
use airlock_store::oci;

use super::cases::{Case, ERROR, File, NEXT, PART, REJECTED, case, good, layout};
use super::craft::*;

/// Spec 8.11-8.12: a validly signed envelope in front of a part whose bytes are wrong.
pub async fn content_cases(site: &Site, out: &mut Vec<Case>) {
    let good = good(site);
    let tar = good.bundle.part(PART).expect("the app part").tar();
    let mut longer = tar.clone();
    longer.extend_from_slice(&[0; 4096]);
    let mut flipped = tar.clone();
    flipped[512 + 20] ^= 0x01;
    let swaps: Vec<(&'static str, String, Vec<u8>)> = vec![
        ("content-larger-than-signed", "decompresses to more than the signed".into(), gzip::compress(&longer)),
        (
            "content-shorter-than-signed",
            format!("{} bytes, signed as {}", tar.len() - 1024, tar.len()),
            gzip::compress(&tar[..tar.len() - 1024]),
        ),
        ("content-byte-flipped", "does not match the signed".into(), gzip::compress(&flipped)),
        ("content-not-gzip", "not a valid gzip stream".into(), tar.clone()),
    ];
    for (name, error, blob) in swaps {
        let mut artifact = artifact(&good);
        replace_layer(&mut artifact, &part_title(PART), blob);
        out.push(case(name, layout(site, name, &artifact).await, REJECTED, error));
    }

    // A 4 MiB file is signed, so the transport cap lets a small blob through; the blob
    // inflates to 256 MiB of zeros, and the ratio check must stop it early.
    let big = site.signed(vec![(format!("{PART}/big.yaml"), vec![b'#'; 4 << 20])], &site.release(NEXT));
    let mut bomb = artifact(&big);
    replace_layer(&mut bomb, &part_title(PART), gzip::compress(&vec![0; 256 << 20]));
    out.push(case("gzip-bomb", layout(site, "gzip-bomb", &bomb).await, REJECTED, "(gzip bomb)"));

    let mut missing = artifact(&good);
    remove_layer(&mut missing, &part_title(PART));
    let name = "part-layer-missing";
    out.push(case(name, layout(site, name, &missing).await, ERROR, format!("no layer holds part {PART}")));
}

type ManifestEdit = fn(&mut oci::OciManifest);

/// Spec 9.1: a manifest that names every blob of a good bundle, but not as the spec lays
/// them out; a reader that searched the layers would take its envelope anyway.
pub async fn manifest_cases(site: &Site, out: &mut Vec<Case>) {
    let good = good(site);
    let edits: [(&str, &str, ManifestEdit); 2] = [
        ("envelope-not-the-first-layer", "layer 0 is application/vnd.airlock.part.v1.tar+gzip, not the envelope", |m| {
            m.layers.rotate_left(1)
        }),
        ("config-not-the-empty-descriptor", "config is application/vnd.oci.image.config.v1+json", |m| {
            m.config.media_type = "application/vnd.oci.image.config.v1+json".into()
        }),
    ];
    for (name, error, edit) in edits {
        let mut artifact = artifact(&good);
        edit_manifest(&mut artifact, edit);
        out.push(case(name, layout(site, name, &artifact).await, ERROR, error));
    }
}

/// Spec 8.13: parts whose digest and size are signed to match, so only the walk of the
/// tar stands between them and the cluster.
pub async fn tar_cases(site: &Site, out: &mut Vec<Case>) {
    let file = |name: &str| site.config_map(name, &site.app_ns, "hostile");
    let (a, b, c, d) = (file("cm-a"), file("cm-b"), file("cm-c"), file("cm-d"));
    let canonical = |files: &[File]| write_canonical(&files.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect::<Vec<_>>());
    let renamed = |path: String| canonical(&[(path, a.1.clone())]);
    let header = |edit: &dyn Fn(&mut [u8])| one_file_tar_with_header_edit(&a.0, &a.1, edit);
    let typeflag = |flag: u8| {
        header(&|h| {
            h[156] = flag;
            h[157..168].copy_from_slice(b"/etc/shadow");
        })
    };
    let not_listed = |path: &str| format!("entry {path:?} is not in the signed file list");
    let not_regular = |flag: char| format!("is not a regular file (type {flag:?})");
    let dotdot = a.0.replacen(&format!("{PART}/"), &format!("{PART}/../../etc/"), 1);
    let absolute = format!("/etc/kubernetes/{}", a.0);
    let other_part = a.0.replacen(PART, "ClusterProfile.other", 1);
    let cases: Vec<(&'static str, Vec<File>, String, Vec<u8>)> = vec![
        ("tar-path-with-dotdot", vec![a.clone()], not_listed(&dotdot), renamed(dotdot.clone())),
        ("tar-absolute-path", vec![a.clone()], not_listed(&absolute), renamed(absolute.clone())),
        ("tar-entry-of-another-part", vec![a.clone()], not_listed(&other_part), renamed(other_part.clone())),
        ("tar-symlink", vec![a.clone()], not_regular('2'), typeflag(b'2')),
        ("tar-hardlink", vec![a.clone()], not_regular('1'), typeflag(b'1')),
        ("tar-character-device", vec![a.clone()], not_regular('3'), typeflag(b'3')),
        ("tar-block-device", vec![a.clone()], not_regular('4'), typeflag(b'4')),
        ("tar-fifo", vec![a.clone()], not_regular('6'), typeflag(b'6')),
        ("tar-pax-header", vec![a.clone()], not_regular('x'), typeflag(b'x')),
        ("tar-gnu-long-name", vec![a.clone()], not_regular('L'), typeflag(b'L')),
        ("tar-setuid-mode", vec![a.clone()], "has a non-canonical header".into(), header(&|h| h[100..108].copy_from_slice(b"0004755\0"))),
        (
            "tar-duplicate-entry",
            vec![a.clone(), b.clone()],
            format!("signed file {:?} is missing", b.0),
            canonical(&[a.clone(), a.clone()]),
        ),
        ("tar-entry-not-signed", vec![a.clone(), b.clone()], not_listed(&c.0), canonical(&[a.clone(), c.clone()])),
        (
            "tar-signed-file-missing",
            vec![a.clone(), b.clone(), c.clone()],
            format!("signed file {:?} is missing", b.0),
            canonical(&[a.clone(), c.clone(), d.clone()]),
        ),
        (
            "tar-entry-content-not-signed",
            vec![a.clone()],
            format!("entry {:?} does not match its signed size and sha256", a.0),
            canonical(&[(a.0.clone(), b.1.clone())]),
        ),
    ];
    for (name, signed_files, error, tar) in cases {
        let signed = site.signed(signed_files, &site.release(NEXT));
        let artifact = with_hostile_tar(&signed, &site.fixture.keys[..2], tar);
        out.push(case(name, layout(site, name, &artifact).await, REJECTED, error));
    }
}

/// Spec 9.3-9.4: the store's own files damaged after a good bundle was written.
pub async fn store_cases(site: &Site, out: &mut Vec<Case>) {
    let good = good(site);
    let mismatch = "content does not match its digest and size";
    let is_gzip = |b: &[u8]| b.starts_with(&[0x1f, 0x8b]);

    let name = "layer-blob-not-its-digest";
    let source = layout(site, name, &artifact(&good)).await;
    let blob = blob_file(&site.path(name), is_gzip);
    let mut bytes = std::fs::read(&blob).expect("blob reads");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&blob, bytes).expect("blob written");
    out.push(case(name, source, ERROR, mismatch));

    // The blob swapped for an older envelope that is validly signed in its own right.
    let name = "envelope-blob-swapped-for-an-older-one";
    let source = layout(site, name, &artifact(&good)).await;
    let older = site.signed(site.files(3, "older"), &site.release(BASELINE - 1));
    std::fs::write(blob_file(&site.path(name), |b| b == good.envelope), &older.envelope).expect("blob written");
    out.push(case(name, source, ERROR, mismatch));

    // A blob the manifest names but the layout lost is damage, not a store without a bundle.
    let name = "envelope-blob-missing";
    let source = layout(site, name, &artifact(&good)).await;
    std::fs::remove_file(blob_file(&site.path(name), |b| b == good.envelope)).expect("blob removed");
    out.push(case(name, source, ERROR, "but not in the store"));

    let name = "manifest-blob-not-its-digest";
    let artifact_good = artifact(&good);
    let source = layout(site, name, &artifact_good).await;
    let manifest = blob_file(&site.path(name), |b| b == artifact_good.manifest_bytes);
    let text = String::from_utf8(artifact_good.manifest_bytes.clone()).expect("manifest is UTF-8");
    let edited = text.replace(&format!("\"{NEXT}\""), &format!("\"{}\"", NEXT + 1));
    assert_ne!(edited, text, "the manifest names version {NEXT}");
    std::fs::write(manifest, edited).expect("manifest written");
    out.push(case(name, source, ERROR, mismatch));

    let name = "index-not-json";
    let source = layout(site, name, &artifact_good).await;
    std::fs::write(site.path(name).join("index.json"), b"{\"manifests\": [").expect("index written");
    out.push(case(name, source, ERROR, "index.json"));

    let archive = |name: &str| StoreRef::OciArchive(site.path(&format!("{name}.tar")));
    let name = "archive-truncated";
    let source = write_store(archive(name), &site.cluster, &artifact_good).await;
    let path = site.path(&format!("{name}.tar"));
    let len = std::fs::metadata(&path).expect("archive written").len();
    std::fs::File::options().write(true).open(&path).and_then(|f| f.set_len(len / 2)).expect("truncated");
    out.push(case(name, source, ERROR, "truncated"));

    let not_layout = |entry: &str| format!("entry {entry:?} is not a file of an OCI layout");
    let prepended: Vec<(&'static str, String, Vec<u8>)> = vec![
        ("archive-entry-with-dotdot", not_layout("../../../tmp/evil.yaml"), tar_entry("../../../tmp/evil.yaml", b'0', "", b"x")),
        ("archive-index-is-a-symlink", not_layout("index.json"), tar_entry("index.json", b'2', "/etc/passwd", b"")),
        (
            "archive-index-twice",
            "entry \"index.json\" appears twice".into(),
            tar_entry("index.json", b'0', "", br#"{"schemaVersion":2,"manifests":[]}"#),
        ),
    ];
    for (name, error, entry) in prepended {
        let source = write_store(archive(name), &site.cluster, &artifact_good).await;
        let path = site.path(&format!("{name}.tar"));
        let mut bytes = entry;
        bytes.extend(std::fs::read(&path).expect("archive reads"));
        std::fs::write(&path, bytes).expect("archive written");
        out.push(case(name, source, ERROR, error));
    }
}
