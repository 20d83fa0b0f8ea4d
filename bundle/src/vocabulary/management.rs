//! Annotations on the objects around a cluster's bundles rather than in them: what the
//! publisher reads and writes on a management cluster's SveltosClusters, Secrets and
//! ConfigMaps, and what the puller writes on its own state objects.

/// On the puller's own objects (state, inventory, Lease, report ConfigMap) and the
/// credentials Secrets: the cluster they belong to. The same key as
/// [`super::CLUSTER_LABEL`], as an annotation.
pub const CLUSTER_ANNOTATION: &str = super::CLUSTER_LABEL;
/// The report ConfigMap's annotation with the `finishedAt` of the newest report the store
/// accepted (bundles-format.md 14.8).
pub const REPORT_PUSHED_ANNOTATION: &str = "airlock.dev/report-pushed";

/// The cluster's report public key (OpenSSH `ssh-ed25519` line), set by `register cluster`.
pub const REPORT_KEY_ANNOTATION: &str = "airlock.dev/report-key";
/// The cluster's age recipient (`age1...`), set by `register cluster`: `publish` encrypts
/// the cluster's Secrets and confidential files to it (bundles-format.md 2.7).
pub const AGE_RECIPIENT_ANNOTATION: &str = "airlock.dev/age-recipient";
/// `allow` lets a cluster whose puller decrypts apply Secrets that came in clear, for a
/// cluster taken off encryption without being registered again; set by hand.
pub const PLAINTEXT_SECRETS_ANNOTATION: &str = "airlock.dev/plaintext-secrets";
/// The one value of [`PLAINTEXT_SECRETS_ANNOTATION`].
pub const PLAINTEXT_SECRETS_ALLOW: &str = "allow";
/// On a SveltosCluster, `"true"`: its bundles confirm a mass prune (spec 2.5.4), so its
/// pullers apply a version that deletes more of the inventory than the guard lets through.
pub const MASS_PRUNE_ANNOTATION: &str = "airlock.dev/allow-mass-prune";
/// The cluster-scoped objects a cluster with watch-namespaces may receive besides the
/// Namespaces of its list, comma-separated `Kind[.group]/name` (bundles-format.md 5.2);
/// set by `register cluster --allow-cluster-scoped`, relayed in its bundles.
pub const CLUSTER_SCOPED_ANNOTATION: &str = "airlock.dev/cluster-scoped";
/// On a SveltosCluster: the name of the management Secret with its store credentials.
pub const STORE_CREDENTIALS_ANNOTATION: &str = "airlock.dev/store-credentials";
/// On a SveltosCluster: the namespace its puller runs in.
pub const PULLER_NAMESPACE_ANNOTATION: &str = "airlock.dev/puller-namespace";
/// On the credentials Secrets: when the credentials stop working, RFC 3339.
pub const EXPIRES_AT_ANNOTATION: &str = "airlock.dev/expires-at";
/// A referenced ConfigMap or Secret with this annotation set to `"true"` holds objects that
/// reach a cluster with an age recipient only encrypted, whatever their kind.
pub const CONFIDENTIAL_ANNOTATION: &str = "airlock.dev/confidential";

/// `finishedAt` of the newest ingested report, RFC 3339 at full precision.
pub const REPORT_TIME_ANNOTATION: &str = "airlock.dev/report-time";
/// The `group/version`s the cluster's API server serves, comma-separated and sorted, as
/// last reported: Helm charts render against them (`--api-versions`).
pub const API_VERSIONS_ANNOTATION: &str = "airlock.dev/api-versions";
/// The bundle version the cluster runs, as last reported.
pub const APPLIED_VERSION_ANNOTATION: &str = "airlock.dev/applied-version";
/// Objects the last reported run found drifted and re-applied.
pub const DRIFT_CORRECTED_ANNOTATION: &str = "airlock.dev/drift-corrected";
/// On a cluster's ClusterConfiguration: the drift its puller found and corrected, per
/// profile, totalled over the ingested reports (JSON).
pub const DRIFT_ANNOTATION: &str = "airlock.dev/drift";
/// The last reported run's error; absent after a run without one.
pub const LAST_ERROR_ANNOTATION: &str = "airlock.dev/last-error";
/// How often the cluster's puller sends a report at least (a duration such as `30m`), set
/// by `register cluster`; ingest counts the intervals missed (spec 14.9).
pub const REPORT_INTERVAL_ANNOTATION: &str = "airlock.dev/report-interval";
/// The last reported run's result as a reason word (`Applied`, `UpToDate`, `DryRun`,
/// `Deferred`, `Rejected`, `Error`): an annotation, since the SveltosCluster's status has no
/// conditions and a server-side apply of a field its schema lacks is refused.
pub const RESULT_ANNOTATION: &str = "airlock.dev/result";
/// What the last reported run did, in words: the bundle version the cluster runs and the
/// error if any.
pub const RESULT_MESSAGE_ANNOTATION: &str = "airlock.dev/result-message";
/// The ConfigurationGroups Sveltos's own controllers staged for the cluster, as
/// `Kind/name (feature)` of their authors, comma-separated; set while there are some:
/// Sveltos then treats the cluster as one of its own agent's, which is not a supported
/// topology.
pub const STAGED_ANNOTATION: &str = "airlock.dev/sveltos-staged";
/// Set by `deregister cluster --final-bundle` to the version of the cluster's final bundle
/// (bundles-format.md 2.5.5): nothing more is published for the cluster.
pub const DECOMMISSION_ANNOTATION: &str = "airlock.dev/decommission";
/// When the cluster's puller reported its final bundle applied (RFC 3339): everything it
/// applied is pruned and it acts no more; `deregister cluster` may remove it.
pub const DECOMMISSIONED_ANNOTATION: &str = "airlock.dev/decommissioned";
