//! `airlock-publisher status`: what the store holds for each selected cluster.
//!
//! Reads each cluster's newest envelope WITHOUT verifying it: this is the publisher
//! looking at its own output, not a decision to apply anything. What pullers report back
//! is not shown yet.

use airlock::bundle::statement::rfc3339;
use airlock::cli::exit;
use airlock::store::StoreError;
use airlock::{ClusterId, Digest, Limits};
use clap::Args;

use super::{SourceArgs, StoreArgs};
use crate::sveltos::select;
use crate::table;

const EXAMPLES: &str = "Example:
  airlock-publisher status --from-dir ./management --from oci://registry.example/airlock

Clusters the store holds nothing for show \"never published\".";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct StatusArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Store to read: same references as publish --to.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// Show only this cluster (NAMESPACE/NAME); repeatable.
    #[arg(long = "cluster", value_name = "NS/NAME")]
    pub clusters: Vec<ClusterId>,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn run(args: StatusArgs) -> anyhow::Result<u8> {
    let store = args.store.open(&args.from).await?;
    let inventory = args.source.open().await?.load().await?;
    let clusters = select::candidates(&inventory.clusters, &args.clusters)?;
    let mut rows = Vec::with_capacity(clusters.len());
    let mut code = exit::OK;
    for c in clusters {
        let cells = match store.fetch_envelope(&c.id, &Limits::SPEC).await {
            Ok(fetched) => match fetched.unverified_statement() {
                Some(s) => {
                    let p = &s.predicate;
                    let digest = s.subject.first().and_then(|d| Digest::from_hex(&d.digest.sha256).ok());
                    vec![
                        p.version.to_string(),
                        digest.as_ref().map_or_else(|| "-".into(), table::short),
                        rfc3339::format(&p.issued_at),
                        rfc3339::format(&p.expires),
                        "published".into(),
                    ]
                }
                None => {
                    code = exit::PARTIAL;
                    status_only("unreadable envelope")
                }
            },
            Err(StoreError::NotFound { .. }) => status_only("never published"),
            Err(e) => {
                tracing::error!(cluster = %c.id, "{e}");
                code = exit::PARTIAL;
                status_only("store error")
            }
        };
        rows.push([vec![c.id.to_string()], cells].concat());
    }
    table::write(&mut std::io::stdout().lock(), &["CLUSTER", "VERSION", "DIGEST", "ISSUED", "EXPIRES", "STATUS"], &rows)?;
    Ok(code)
}

fn status_only(status: &str) -> Vec<String> {
    ["-", "-", "-", "-", status].map(String::from).to_vec()
}
