//! Sveltos `helmCharts` entries turned into Kubernetes objects, on the management side, by
//! the real helm binary (v3 or v4): fetch the chart once, render it with `helm template`,
//! split the output into Helm's phases (CRDs, release objects, hooks per event in Helm's run
//! order), remember the render by its inputs.
//!
//! Entry points: [`Helm::locate`] finds the binary, [`ChartRef::new`] checks an entry's
//! source fields, [`Renderer::render`] renders a [`ReleaseRequest`]. For a profile's entry
//! and one cluster: [`chart_fields`] templates the entry's fields, [`charts`] looks up a
//! run's charts before any cluster is fingerprinted and names the chart an entry points at.
//! The render's `helm_charts` stage turns an entry into a cluster's objects with these, and
//! its `hold::releases` decides which profile owns a release two profiles deploy; what an
//! entry's `options` change is read with the profile (`sources::model::helm_options`).
//!
//! Not here: reading the entries from a profile (`sources::model::helm_chart`), reading Secrets
//! (the caller passes the credentials' data), deciding install/upgrade/uninstall, applying
//! hooks (the puller), and Flux-source charts.
//!
//! Layout: `binary` (locate, version, run with a budget), `scratch` (throw-away helm
//! homes), `source` (repository kinds, versions, access), `fetch` + `cache` + `archive`
//! (`helm pull` into a digest-keyed cache), `template` (`helm template`), `release` +
//! `hooks` (splitting and ordering), `memo` (render memoization), `variance` (whether a
//! render can differ between runs), `renderer`, `lazy` (made when first needed).

mod archive;
mod binary;
mod cache;
pub mod cache_transfer;
pub mod chart_fields;
pub mod charts;
mod error;
mod fetch;
mod hooks;
mod lazy;
mod memo;
mod release;
mod renderer;
mod scratch;
mod source;
mod template;
mod variance;

pub use binary::{Helm, HelmVersion};
pub use cache::FetchedChart;
pub use error::{ChartLabel, Class, HelmError};
pub use hooks::{DeletePolicy, HELM_DELETE_POLICY_ANNOTATION, HELM_HOOK_ANNOTATION, HELM_WEIGHT_ANNOTATION, HookEvent, HookSpec};
pub use lazy::LazyRenderer;
pub use release::{ChartId, Hook, Manifest, Release};
pub use renderer::{Rendered, Renderer, RendererSettings};
pub use source::{Access, ChartRef, Credentials, Repository, VersionSpec};
pub use template::{Capabilities, ReleaseRequest};

/// What a [`ReleaseRequest`] asks `helm template` to print, as a profile's options set it.
pub use crate::sources::model::helm_options::TemplateOptions;
