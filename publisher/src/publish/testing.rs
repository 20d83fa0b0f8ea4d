//! What the pipeline's tests share: a publisher into an OCI layout with a key of its own.

use std::path::Path;

use airlock_bundle::SigningKey;
use airlock_bundle::age::Recipient;
use airlock_store::StoreRef;

use super::*;

/// A publisher to the layout in `root`, remembering renders in `root` when `memo`.
pub(super) async fn publisher(root: &Path, age_recipients: Vec<Recipient>, memo: bool) -> Publisher {
    let layout = StoreRef::OciLayout(root.join("layout"));
    Publisher {
        signer: Signer::new(vec![Box::new(SigningKey::from_seed([5; 32]))], 1, None, SignedDuration::from_hours(720)).unwrap(),
        store: airlock_store::open(&layout, &Default::default()).await.unwrap().into(),
        meta: PublishMeta::default(),
        only: Vec::new(),
        shard: None,
        dry_run: false,
        limits: Limits::SPEC,
        memo: if memo { Memo::open(&root.join("memo.json")) } else { Memo::disabled() },
        renew_before: SignedDuration::from_hours(24),
        remote: Fetcher::default(),
        kubectl: None,
        helm: None,
        helm_cache: None,
        age_recipients,
        mirrors: Default::default(),
    }
}
