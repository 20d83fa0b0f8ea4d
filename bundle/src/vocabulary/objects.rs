//! Labels and annotations on the objects a bundle carries (bundles-format.md 2.5), written
//! by the publisher or by the puller as it applies them. The hook annotations are
//! [`super::hooks`]'s.

/// Ties an object to the cluster it was applied for; prune and drift select by it. The
/// puller's own objects carry the same key as an annotation ([`super::CLUSTER_ANNOTATION`]).
pub const CLUSTER_LABEL: &str = "airlock.dev/cluster";
/// The part (profile) an object comes from.
pub const PROFILE_LABEL: &str = "airlock.dev/profile";
/// The bundle version that last changed the object.
pub const VERSION_ANNOTATION: &str = "airlock.dev/version";
/// The bundle digest that last changed the object.
pub const BUNDLE_DIGEST_ANNOTATION: &str = "airlock.dev/bundle-digest";
/// `"true"`: create the object when absent, never touch it otherwise (spec 2.5.1).
pub const CREATE_ONLY_ANNOTATION: &str = "airlock.dev/create-only";
/// `"true"`: the object may take over a live object of its name that Airlock did not create
/// for this cluster; it is then released, never pruned, when it leaves the bundle (spec
/// 2.5.4).
pub const ADOPT_ANNOTATION: &str = "airlock.dev/adopt";
/// `"true"`: delete and create the object again when its update is refused in a way only
/// that resolves; the publisher sets it on each object of a policyRef with `force` (spec
/// 2.5.2).
pub const FORCE_RECREATE_ANNOTATION: &str = "airlock.dev/force-recreate";
/// The pod-template annotation whose new value rolls a workload out again (spec 5.10).
pub const RESTARTED_AT_ANNOTATION: &str = "airlock.dev/restarted-at";

/// The Helm release an object belongs to: its name, and its namespace (absent: the empty
/// string), spec 2.5.3.
pub const RELEASE_LABEL: &str = "airlock.dev/helm-release";
pub const RELEASE_NAMESPACE_LABEL: &str = "airlock.dev/helm-release-namespace";
/// `<chart>-<version>` as Helm's `helm.sh/chart` convention spells it (`+` as `_`, at most
/// 63 characters); a puller does not read it.
pub const CHART_LABEL: &str = "airlock.dev/helm-chart";
/// The digest of the values a release was rendered with (SHA-256 of their compact JSON,
/// keys sorted), on each of its objects beside the release labels; a puller does not read it.
pub const VALUES_ANNOTATION: &str = "airlock.dev/helm-values";
/// The exact chart version a release was rendered from, the chart's repository as the
/// profile names it, and the chart's `appVersion` when it has one: annotations on every
/// object of a release, which the puller reads only to name the release in its report
/// (spec 2.5.3, 14.3).
pub const CHART_VERSION_ANNOTATION: &str = "airlock.dev/helm-chart-version";
pub const REPOSITORY_ANNOTATION: &str = "airlock.dev/helm-repository";
pub const APP_VERSION_ANNOTATION: &str = "airlock.dev/helm-app-version";
/// `ready`, or `ready-and-jobs`: the site waits until the object is ready (and each Job
/// completed) before the release's post- hooks.
pub const WAIT_ANNOTATION: &str = "airlock.dev/helm-wait";
/// How long the objects of a release may take to be ready, in seconds.
pub const WAIT_TIMEOUT_ANNOTATION: &str = "airlock.dev/helm-wait-timeout-seconds";
/// The operations after whose failure the object is deleted if the run created it:
/// `install`, `upgrade`, comma-separated.
pub const CLEANUP_ON_FAIL_ANNOTATION: &str = "airlock.dev/helm-cleanup-on-fail";
/// How a release's objects are pruned, as Helm's `uninstall --cascade`: `background`,
/// `foreground` or `orphan`.
pub const DELETION_PROPAGATION_ANNOTATION: &str = "airlock.dev/helm-deletion-propagation";
