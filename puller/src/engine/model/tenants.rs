//! The impersonating clients of a run, one per tenant ServiceAccount (spec 5.3): made by
//! the caller, carried in the settings, used by `api::kube_api` for every write of a
//! tenant's part. Which accounts a bundle names and whether the puller may impersonate
//! them is `plan::tenant`'s.

use std::collections::BTreeMap;
use std::fmt;

use airlock_bundle::statement::ServiceAccountRef;

use super::error::ApiError;

/// The impersonating clients, one per tenant ServiceAccount.
#[derive(Clone, Default)]
pub struct Tenants {
    clients: BTreeMap<ServiceAccountRef, kube::Client>,
}

impl Tenants {
    /// Clients made from `config` (the puller's own), each impersonating one of `accounts`.
    pub fn connect(config: &kube::Config, accounts: impl IntoIterator<Item = ServiceAccountRef>) -> Result<Tenants, kube::Error> {
        let mut clients = BTreeMap::new();
        for account in accounts {
            if clients.contains_key(&account) {
                continue;
            }
            let mut config = config.clone();
            config.auth_info.impersonate = Some(account.user());
            config.auth_info.impersonate_groups = None;
            clients.insert(account, kube::Client::try_from(config)?);
        }
        Ok(Tenants { clients })
    }

    /// The client that writes as `account`.
    pub fn writer(&self, account: &ServiceAccountRef) -> Result<&kube::Client, ApiError> {
        self.clients.get(account).ok_or_else(|| ApiError {
            code: 0,
            message: format!("no client impersonates ServiceAccount {account}: refused rather than written as the puller"),
        })
    }

    pub(crate) fn accounts(&self) -> impl Iterator<Item = &ServiceAccountRef> {
        self.clients.keys()
    }
}

impl fmt::Debug for Tenants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clients.keys().map(ToString::to_string)).finish()
    }
}
