//! Exhaustive loops, as rustls does for handshake messages: every truncation of the
//! envelope and every flipped byte of the envelope and of a part.

use airlock_bundle::gzip;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::Transport;

use crate::{L, check, good};

#[test]
fn rejects_every_truncation_of_the_envelope() {
    let fx = Fixture::new(1);
    let env = good(&fx).envelope;
    for len in 0..env.len() {
        assert!(check(&fx, &env[..len]).is_err(), "truncated at {len} accepted");
    }
}

#[test]
fn rejects_every_flipped_byte_of_the_envelope() {
    let fx = Fixture::new(1);
    let env = good(&fx).envelope;
    check(&fx, &env).unwrap();
    for i in 0..env.len() {
        let mut bad = env.clone();
        bad[i] ^= 0x01;
        // The key id too: a signature counts only for the key its id names (spec 6.4).
        assert!(check(&fx, &bad).is_err(), "flip at {i} accepted");
    }
}

#[test]
fn rejects_every_flipped_byte_of_a_part_that_changes_its_content() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let env = check(&fx, &signed.envelope).unwrap();
    let tar = signed.bundle.part("ClusterProfile.web").unwrap().tar();
    let gz = gzip::compress(&tar);
    for i in 0..gz.len() {
        let mut bad = gz.clone();
        bad[i] ^= 0x01;
        if let Ok(p) = env.verify_part("ClusterProfile.web", Transport::Gzip(&bad), &L) {
            // Only a flip that leaves the content as signed may pass: a gzip header field
            // that carries none (FTEXT, mtime, OS), or a deflate match whose distance
            // changes within a run of equal bytes (the tar's zero padding). Another
            // inflater must agree that the content is unchanged.
            let mut inflated = Vec::new();
            let same = std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bad[..]), &mut inflated).is_ok() && inflated == tar;
            assert!((3..10).contains(&i) || same, "flip at {i} accepted");
            let whole = env.clone().finish(vec![p], &L);
            assert!(whole.is_err(), "the other part is still missing");
        }
    }
    for i in 0..tar.len() {
        let mut bad = tar.clone();
        bad[i] ^= 0x01;
        assert!(env.verify_part("ClusterProfile.web", Transport::Tar(&bad), &L).is_err(), "tar flip at {i} accepted");
    }
}
