//! Micro-benchmarks of the contract's hot paths: canonical tar, digests, gzip, signing and
//! verification, on deterministic data.
//!
//!     cargo bench -p airlock-bundle --features testing --bench contract

use std::hint::black_box;

use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Floor, Transport, verify_envelope};
use airlock_bundle::{Digest, Limits};
use airlock_bundle::{gzip, tar};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// `count` ConfigMap files of about `size` bytes each in one part, with a fixed seed.
/// Random letters: they compress less than 2:1, a worst case for inflating.
fn files(count: usize, size: usize) -> Vec<(String, Vec<u8>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|i| {
            let mut body = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: bench\ndata:\n  v: \"");
            while body.len() < size {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                body.push(char::from(b'a' + (state % 26) as u8));
            }
            body.push_str("\"\n");
            (format!("ClusterProfile.bench/ConfigMap.bench.cm-{i:05}.yaml"), body.into_bytes())
        })
        .collect()
}

/// `count` ConfigMaps of about `size` bytes of YAML each, words from a small vocabulary as
/// real manifests are: they compress about 6:1, like `hack/bench/gen-objects.py`'s.
fn yaml_files(count: usize, size: usize) -> Vec<(String, Vec<u8>)> {
    const WORDS: [&str; 12] = ["alpha", "bravo", "cache", "delta", "edge", "flux", "gamma", "hydra", "ion", "kilo", "nova", "pulse"];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..count)
        .map(|i| {
            let mut body = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: bench\ndata:\n");
            let mut key = 0;
            while body.len() < size {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let (a, b) = (WORDS[(state % 12) as usize], WORDS[((state >> 8) % 12) as usize]);
                body.push_str(&format!("  key-{key}: \"{a}-{b}-{}\"\n", state % 1000));
                key += 1;
            }
            (format!("ClusterProfile.bench/ConfigMap.bench.cm-{i:05}.yaml"), body.into_bytes())
        })
        .collect()
}

/// Verifying one 10 MB part (spec 8.1-8.13) next to its floor: inflating it and hashing
/// it once.
fn verify_group(c: &mut Criterion, name: &str, files: Vec<(String, Vec<u8>)>) {
    let fx = Fixture::new(1);
    let signed = fx.signed(1, files);
    let tar_bytes = signed.bundle.part("ClusterProfile.bench").unwrap().tar();
    let gz = gzip::compress(&tar_bytes);
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(tar_bytes.len() as u64));
    g.sample_size(20);
    g.bench_function("floor_gunzip_sha256", |b| {
        b.iter(|| Digest::of(&gzip::decompress(black_box(&gz), tar_bytes.len() as u64, &Limits::SPEC).unwrap()))
    });
    g.bench_function("verify_envelope_and_part", |b| {
        let floor = Floor::default();
        b.iter(|| {
            let env = verify_envelope(&signed.envelope, None, &fx.expect(&floor), &Limits::SPEC).unwrap();
            env.verify_part("ClusterProfile.bench", Transport::Gzip(black_box(&gz)), &Limits::SPEC).unwrap()
        })
    });
    g.finish();
}

fn contract(c: &mut Criterion) {
    let ten_mb = files(2_560, 4_096);
    let fx = Fixture::new(1);
    let tar_bytes = Fixture::bundle(ten_mb.clone()).part("ClusterProfile.bench").unwrap().tar();

    let mut g = c.benchmark_group("10MB");
    g.throughput(Throughput::Bytes(tar_bytes.len() as u64));
    g.sample_size(20);
    g.bench_function("canonical_tar", |b| {
        let refs: Vec<(&str, &[u8])> = ten_mb.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
        b.iter(|| tar::write_canonical(black_box(&refs)))
    });
    g.bench_function("sha256", |b| b.iter(|| Digest::of(black_box(&tar_bytes))));
    g.bench_function("gzip", |b| b.iter(|| gzip::compress(black_box(&tar_bytes))));
    g.finish();
    verify_group(c, "10MB", ten_mb);
    verify_group(c, "10MB-yaml", yaml_files(2_560, 4_096));

    let mut g = c.benchmark_group("envelope");
    g.bench_function("sign_10k_file_statement", |b| {
        let many = files(10_000, 64);
        let bundle = Fixture::bundle(many);
        b.iter(|| airlock_bundle::sign::sign(bundle.clone(), &fx.release(1), &|_| Default::default(), &fx.keys, None))
    });
    g.bench_function("verify_signature_only", |b| {
        let small = fx.signed(1, Fixture::files());
        let floor = Floor::default();
        b.iter(|| verify_envelope(black_box(&small.envelope), None, &fx.expect(&floor), &Limits::SPEC).unwrap())
    });
    g.finish();
}

criterion_group!(benches, contract);
criterion_main!(benches);
