//! Listing the clusters a registry holds: the catalog read page by page from the prefix
//! to the end of its repositories, however the registry orders names. Only the catalog is
//! read; whether a repository holds a bundle is found when it is fetched.

use std::collections::HashSet;

use oci_client::Reference;
use reqwest::header::LINK;

use super::client::Registry;
use super::failure::Class;
use crate::error::StoreError;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;

const CATALOG_PAGE: usize = 1000;

/// The clusters whose repositories the registry's catalog lists under the prefix.
pub(super) async fn clusters(registry: &Registry, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(default)]
        repositories: Vec<String>,
    }
    // Only for credentials: a registry with a token service wants scope
    // `registry:catalog:*`, which oci-client cannot ask for.
    let reference = Reference::with_tag(registry.host.clone(), registry.prefix.clone(), "latest".into());
    registry.client.store_auth_if_needed(reference.resolve_registry(), &registry.auth).await;
    let mut scan = CatalogScan::new(&registry.prefix);
    let (mut clusters, mut last, mut pages) = (Vec::new(), scan.start(), 0);
    loop {
        // Repository names need no escaping in a query.
        let mut url = format!("{}/v2/_catalog?n={CATALOG_PAGE}", registry.base_url);
        if let Some(last) = &last {
            url = format!("{url}&last={last}");
        }
        // A page of `CATALOG_PAGE` names stays far below the manifest limit.
        let (headers, body) = registry.get_capped(&reference, &url, "application/json", limits.oci_manifest_bytes, "catalog").await?;
        let page: Page = serde_json::from_slice(&body)
            .map_err(|e| registry.error("catalog".into(), Class::Malformed, format!("not a catalog page: {e}")))?;
        pages += 1;
        last = scan.page(&page.repositories, headers.contains_key(LINK), |name| clusters.extend(name.parse::<ClusterId>().ok()));
        if last.is_none() {
            break;
        }
    }
    tracing::debug!(store = %registry.describe, pages, clusters = clusters.len(), "catalog read");
    clusters.sort();
    clusters.dedup();
    Ok(clusters)
}

/// Reads the catalog for the repositories under a prefix, without the rest of the
/// registry: a registry shared by many fleets or teams holds far more repositories than
/// one prefix, and some (Distribution among them) walk their storage for every page.
///
/// The listing starts after the prefix itself (`last=PREFIX`) and stops at the first
/// name past the prefix's repositories. Registries sort the catalog either by bytes or,
/// like Distribution, path by path (`/` before any other character); in both orders the
/// names under `PREFIX/` are one run that comes after `PREFIX`, but only in byte order
/// do the names past `PREFIX/` all sort after it (`PREFIX-x` comes before `PREFIX/a` in
/// bytes, after `PREFIX/z` by path). So a name outside the prefix ends the listing when
/// it follows a name inside, or when it sorts after `PREFIX/` by bytes.
struct CatalogScan {
    /// `PREFIX/`, or empty for a registry read whole.
    scope: String,
    inside: bool,
    /// The last names of the pages read. Only a name seen before tells that the registry
    /// is going round: comparing names cannot, as the registry's order may not be bytes'
    /// (`PREFIX/ns/a` comes before `PREFIX/ns-2/a` by path, after it by bytes).
    lasts: HashSet<String>,
}

impl CatalogScan {
    fn new(prefix: &str) -> CatalogScan {
        let scope = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        CatalogScan { scope, inside: false, lasts: HashSet::new() }
    }

    /// The `last` to ask the first page after.
    fn start(&self) -> Option<String> {
        self.scope.strip_suffix('/').map(String::from)
    }

    /// Hands `found` each name of a page under the prefix, the prefix taken off. Returns
    /// the `last` to ask the next page after, or `None` when the listing is done: the page
    /// went past the prefix's repositories, the registry said there is no more (`more`),
    /// or it is going round.
    fn page<'n>(&mut self, names: &'n [String], more: bool, mut found: impl FnMut(&'n str)) -> Option<String> {
        for name in names {
            match name.strip_prefix(&self.scope) {
                Some(rest) => {
                    self.inside = true;
                    found(rest);
                }
                None if self.inside || name.as_str() > self.scope.as_str() => return None,
                None => {}
            }
        }
        let last = names.last().filter(|_| more)?;
        self.lasts.insert(last.clone()).then(|| last.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;

    /// Distribution's catalog order: path by path, the separator before any character.
    fn by_path(a: &str, b: &str) -> Ordering {
        a.replace('/', "\0").cmp(&b.replace('/', "\0"))
    }

    /// Reads `registry` as `clusters` does: pages of `page` names after `last`, in the
    /// registry's `order`. Gives the names found and the pages read.
    fn scan(registry: &[String], order: fn(&str, &str) -> Ordering, prefix: &str, page: usize) -> (Vec<String>, usize) {
        let mut sorted = registry.to_vec();
        sorted.sort_by(|a, b| order(a, b));
        let mut scan = CatalogScan::new(prefix);
        let (mut found, mut last, mut pages) = (Vec::new(), scan.start(), 0);
        loop {
            let names: Vec<String> =
                sorted.iter().filter(|n| last.as_ref().is_none_or(|l| order(n, l).is_gt())).take(page).cloned().collect();
            pages += 1;
            last = scan.page(&names, names.len() == page, |n| found.push(n.to_string()));
            if last.is_none() {
                found.sort();
                return (found, pages);
            }
        }
    }

    #[test]
    fn the_catalog_is_read_from_the_prefix_to_its_end_in_either_order() {
        // Two namespaces that sort one way by path and the other by bytes, across pages.
        let mut under: Vec<String> = (0..2500).map(|i| format!("fleet/c{i:05}")).collect();
        under.extend((0..1500).map(|i| format!("fleet-2/c{i:05}")));
        under.sort();
        let mut registry: Vec<String> = under.iter().map(|c| format!("team/a/{c}")).collect();
        // Beside the prefix, before and after it in either order; many more than it holds.
        for other in ["team/a-b", "team/a.b", "team/a0", "team/ab", "team/", "team", "teal", "tean", "a", "z"] {
            registry.extend((0..1500).map(|i| format!("{other}/fleet/c{i:05}")));
        }
        registry.push("team/a".into());
        // By path the prefix's 4,000 names come first: four pages and one to see past them.
        // By bytes the 3,000 names of `team/a-b` and `team/a.b` come before them: three
        // pages more, and the page that ends the run also goes past it.
        for (order, pages) in [(by_path as fn(&str, &str) -> Ordering, 5), (str::cmp, 8)] {
            assert_eq!(scan(&registry, order, "team/a", 1000), (under.clone(), pages), "exactly the names under the prefix");
            assert_eq!(scan(&registry, order, "team/b", 1000).0, Vec::<String>::new());
            let (whole, _) = scan(&registry, order, "", 1000);
            assert_eq!(whole.len(), registry.len(), "no prefix: the whole catalog");
        }
    }

    #[test]
    fn a_registry_going_round_ends_the_listing() {
        let page: Vec<String> = (0..3).map(|i| format!("fleet/c{i}")).collect();
        let mut scan = CatalogScan::new("");
        let mut found = 0;
        assert_eq!(scan.page(&page, true, |_| found += 1), Some("fleet/c2".to_string()));
        assert_eq!(scan.page(&page, true, |_| found += 1), None, "the same page again");
        assert_eq!(found, 6);
    }
}
