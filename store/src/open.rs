//! Opening the store a [`StoreRef`] names, as a [`Store`] or, for the OCI kinds, as an
//! [`OciStore`] with raw artifact access. Nothing is read or written until the store is used.

use super::credentials::RegistryCredentials;
use super::git::{GitClusters, GitStore};
use super::oci_archive::ArchiveStore;
use super::oci_layout::LayoutStore;
use super::oci_registry::RegistryStore;
use super::reference::StoreRef;
use crate::error::StoreError;
use crate::store::{OciStore, Store};

/// Opens a store. `credentials` apply to registries; Git URLs carry their own. A Git
/// reference with placeholders opens the per-cluster layout (spec 9.5.1).
pub async fn open(reference: &StoreRef, credentials: &RegistryCredentials) -> Result<Box<dyn Store>, StoreError> {
    Ok(match reference {
        StoreRef::OciRegistry { host, prefix, plain_http } => Box::new(RegistryStore::new(host, prefix, *plain_http, credentials)?),
        StoreRef::OciLayout(path) => Box::new(LayoutStore::open(path)?),
        StoreRef::OciArchive(path) => Box::new(ArchiveStore::open(path)?),
        StoreRef::Git { url, branch } if reference.is_per_cluster() => Box::new(GitClusters::open(url, branch)?),
        StoreRef::Git { url, branch } => Box::new(GitStore::open(url, branch)?),
    })
}

/// Opens an OCI store (registry, layout or archive) for raw artifact access.
pub async fn open_oci(reference: &StoreRef, credentials: &RegistryCredentials) -> Result<Box<dyn OciStore>, StoreError> {
    Ok(match reference {
        StoreRef::OciRegistry { host, prefix, plain_http } => Box::new(RegistryStore::new(host, prefix, *plain_http, credentials)?),
        StoreRef::OciLayout(path) => Box::new(LayoutStore::open(path)?),
        StoreRef::OciArchive(path) => Box::new(ArchiveStore::open(path)?),
        StoreRef::Git { .. } => {
            return Err(StoreError::Config {
                store: reference.to_string(),
                message: "not an OCI store: this needs oci://, oci+http://, oci-layout: or oci-archive:".into(),
            });
        }
    })
}
