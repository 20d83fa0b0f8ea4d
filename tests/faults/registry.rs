//! The registry failing under the puller, through the HTTP fault proxy: answering 500 to
//! everything, answering 500 to the part's blob after the envelope verified, cutting the
//! part's blob mid-transfer, and stopping (every connection closed, new ones refused)
//! mid-blob. A failed fetch must be exit 1 naming the store and change nothing, because
//! the puller applies nothing before every part is verified (spec 8, last line); the next
//! run through a healthy proxy applies the same bundle and converges.

use airlock_bundle::SignedBundle;
use airlock_e2e::fault_proxy::Proxy;
use airlock_e2e::hostile_site::{BASELINE, Site};
use airlock_store::oci::{self, GzipCache};
use airlock_store::{PublishMeta, RegistryCredentials, StoreRef};

use super::{Version, assert_applied, assert_converged, assert_failed, changes, state_version};

/// ConfigMaps per fault version and their size: a part blob of about 400 KB, several
/// times the cut-off below.
const MAPS: usize = 48;
const MAP_BYTES: usize = 16 * 1024;
/// Where a transfer is cut or the registry stops: well into the part's blob, well past
/// anything else the puller reads.
const CUT_AFTER: u64 = 64 * 1024;

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Every request answered HTTP 500, from the first manifest request on.
    EveryRequest500,
    /// The part's blob answered HTTP 500 once, after the envelope was fetched and verified.
    PartBlob500,
    /// The part's blob cut after `CUT_AFTER` bytes; the registry stays up.
    PartBlobCut,
    /// The registry stops after `CUT_AFTER` bytes of the part's blob: open connections
    /// close, new ones are refused until it resumes.
    StoppedMidBlob,
    /// The registry down before the run: every connection refused.
    Down,
}

impl Fault {
    /// Sets the proxy up for a bundle whose part blob is `part` (hex digest).
    fn arm(self, proxy: &Proxy, part: &str) {
        match self {
            Fault::EveryRequest500 => proxy.answer_500("", usize::MAX),
            Fault::PartBlob500 => proxy.answer_500(part, 1),
            Fault::PartBlobCut => proxy.cut_response(part, CUT_AFTER),
            Fault::StoppedMidBlob => proxy.stop_during_response(part, CUT_AFTER),
            Fault::Down => proxy.stop(),
        }
    }

    /// What the proxy must have done, on a line of its events naming the request.
    fn event(self) -> String {
        match self {
            Fault::EveryRequest500 | Fault::PartBlob500 => ": 500".into(),
            Fault::PartBlobCut => format!(": cut after {CUT_AFTER} bytes"),
            Fault::StoppedMidBlob => format!(": stopped the server after {CUT_AFTER} bytes"),
            Fault::Down => "stopped: stopped by the test".into(),
        }
    }

    /// Whether the fault hits the part's blob (else the first request).
    fn on_part(self) -> bool {
        matches!(self, Fault::PartBlob500 | Fault::PartBlobCut | Fault::StoppedMidBlob)
    }

    /// The puller's error, after the store's name: a store error, to retry (exit 1), that
    /// names what it was reading.
    fn error(self, cluster: &str, part: &str) -> String {
        let layer = format!("unavailable: layer sha256:{part} of {cluster}: ");
        match self {
            Fault::EveryRequest500 => format!("unavailable: bundle for {cluster}: registry answered HTTP 500"),
            Fault::PartBlob500 => format!("{layer}registry answered HTTP 500"),
            Fault::PartBlobCut | Fault::StoppedMidBlob => {
                format!("{layer}request failed: request or response body error: error reading a body from connection")
            }
            Fault::Down => format!("unavailable: bundle for {cluster}: cannot connect: client error (Connect)"),
        }
    }
}

const FAULTS: [Fault; 5] = [Fault::EveryRequest500, Fault::PartBlob500, Fault::PartBlobCut, Fault::StoppedMidBlob, Fault::Down];

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_registry_fails_the_run_and_the_next_run_converges() {
    let mut site = Site::new().await;
    let proxy = Proxy::http(&airlock_e2e::service_env("AIRLOCK_REGISTRY")).await;
    let direct: StoreRef =
        format!("oci+http://{}/faults", airlock_e2e::service_env("AIRLOCK_REGISTRY")).parse().expect("a registry reference");
    let registry = airlock_store::open(&direct, &RegistryCredentials::default()).await.expect("registry opens");
    let source = format!("oci+http://{}/faults", proxy.addr());

    let baseline = Version::new(BASELINE, 4, 256);
    registry.publish(&[baseline.signed(&site)], &PublishMeta::default()).await.expect("baseline published");
    site.apply_baseline(&source).await;
    let mut applied = baseline.number;

    for (i, fault) in FAULTS.into_iter().enumerate() {
        let next = Version::new(BASELINE + 1 + i as u64, MAPS, MAP_BYTES);
        let signed = next.signed(&site);
        let part = part_blob(&signed);
        registry.publish(&[signed], &PublishMeta::default()).await.expect("published");
        let before = site.snapshot().await;
        fault.arm(&proxy, &part);

        let run = site.sync(&source, &[]).await;
        println!("| {fault:?} | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
        assert_failed(&run, 1, &format!("{source}: {}", fault.error(&site.cluster.to_string(), &part)));
        let events = proxy.events();
        let fired = events.iter().any(|e| e.ends_with(&fault.event()) && (!fault.on_part() || e.contains(&part)));
        assert!(fired, "{fault:?}: the proxy never did it: {events:#?}");
        assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "{fault:?} changed objects");
        assert_eq!(state_version(&site).await, Some(applied), "{fault:?}: the state moved");

        proxy.resume().await;
        let healed = site.sync(&source, &[]).await;
        assert_applied(&healed, next.number);
        assert_converged(&site, &next).await;
        applied = next.number;
    }
}

/// The hex digest of the blob of the bundle's only part, as the registry serves it.
pub fn part_blob(signed: &SignedBundle) -> String {
    let artifact = oci::artifact(signed, &PublishMeta::default(), &GzipCache::default());
    let layer = artifact.manifest.layers.iter().find(|l| l.annotations.get(oci::TITLE).is_some_and(|t| t.ends_with(".tar.gz")));
    layer.expect("a part layer").digest.hex()
}
