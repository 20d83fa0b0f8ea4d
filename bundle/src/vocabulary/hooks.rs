//! Helm hooks as a bundle names them (spec 2.5.3): the site's hook annotations and the
//! words their values are made of. The publisher reads Helm's own `helm.sh/hook*`
//! annotations into these words and writes them as the site's; the puller reads them back.

use std::fmt;
use std::str::FromStr;

/// The events a hook fires on, comma-separated ([`HookEvent`], the site's only).
pub const HOOK_ANNOTATION: &str = "airlock.dev/hook";
/// An integer; lower weights fire first. 0 when absent.
pub const HOOK_WEIGHT_ANNOTATION: &str = "airlock.dev/hook-weight";
/// When the hook's object is deleted, comma-separated ([`DeletePolicy`]);
/// `before-hook-creation` when absent.
pub const HOOK_DELETE_POLICY_ANNOTATION: &str = "airlock.dev/hook-delete-policy";
/// How long a hook Job or Pod may take to finish, in seconds.
pub const HOOK_TIMEOUT_ANNOTATION: &str = "airlock.dev/hook-timeout-seconds";

/// A name that is none of a vocabulary's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a {what}")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
}

/// An event a Helm hook fires on, spelt as Helm spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    PreInstall,
    PostInstall,
    PreUpgrade,
    PostUpgrade,
    PreDelete,
    /// Fires after the release's objects were pruned.
    PostDelete,
    /// Helm's rollback events, which a bundle never ships: a site has no earlier release
    /// to roll back to.
    PreRollback,
    PostRollback,
    /// `helm test`; Sveltos runs it only with `options.runTests`.
    Test,
}

impl HookEvent {
    pub const ALL: [HookEvent; 9] = [
        HookEvent::PreInstall,
        HookEvent::PostInstall,
        HookEvent::PreUpgrade,
        HookEvent::PostUpgrade,
        HookEvent::PreDelete,
        HookEvent::PostDelete,
        HookEvent::PreRollback,
        HookEvent::PostRollback,
        HookEvent::Test,
    ];

    /// The annotation's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreInstall => "pre-install",
            HookEvent::PostInstall => "post-install",
            HookEvent::PreUpgrade => "pre-upgrade",
            HookEvent::PostUpgrade => "post-upgrade",
            HookEvent::PreDelete => "pre-delete",
            HookEvent::PostDelete => "post-delete",
            HookEvent::PreRollback => "pre-rollback",
            HookEvent::PostRollback => "post-rollback",
            HookEvent::Test => "test",
        }
    }

    /// Whether [`HOOK_ANNOTATION`] may name it (spec 2.5.3): every event but the rollbacks.
    pub fn on_site(self) -> bool {
        !matches!(self, HookEvent::PreRollback | HookEvent::PostRollback)
    }
}

impl FromStr for HookEvent {
    type Err = UnknownName;

    /// The event of exactly this spelling; Helm's older aliases are the reader's to map.
    fn from_str(text: &str) -> Result<HookEvent, UnknownName> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == text).ok_or_else(|| UnknownName { what: "hook event", name: text.to_string() })
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a hook's object is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeletePolicy {
    /// Delete the previous copy (and wait for it to go) before creating the hook; the
    /// policy when none is written.
    BeforeHookCreation,
    /// Delete it once it finished well (Helm: once every hook of the event succeeded, in
    /// reverse run order).
    HookSucceeded,
    /// Delete it when it failed or timed out.
    HookFailed,
}

impl DeletePolicy {
    pub const ALL: [DeletePolicy; 3] = [DeletePolicy::BeforeHookCreation, DeletePolicy::HookSucceeded, DeletePolicy::HookFailed];

    pub fn as_str(self) -> &'static str {
        match self {
            DeletePolicy::BeforeHookCreation => "before-hook-creation",
            DeletePolicy::HookSucceeded => "hook-succeeded",
            DeletePolicy::HookFailed => "hook-failed",
        }
    }
}

impl FromStr for DeletePolicy {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<DeletePolicy, UnknownName> {
        DeletePolicy::ALL
            .into_iter()
            .find(|p| p.as_str() == text)
            .ok_or_else(|| UnknownName { what: "hook delete policy", name: text.to_string() })
    }
}

impl fmt::Display for DeletePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_written() {
        for event in HookEvent::ALL {
            assert_eq!(event.as_str().parse::<HookEvent>(), Ok(event));
        }
        for policy in DeletePolicy::ALL {
            assert_eq!(policy.as_str().parse::<DeletePolicy>(), Ok(policy));
        }
    }

    #[test]
    fn rejects_unknown_names() {
        assert_eq!("test-success".parse::<HookEvent>(), Err(UnknownName { what: "hook event", name: "test-success".into() }));
        assert_eq!(" pre-install".parse::<HookEvent>().unwrap_err().name, " pre-install");
        assert_eq!("never".parse::<DeletePolicy>().unwrap_err().to_string(), "\"never\" is not a hook delete policy");
        let site: Vec<&str> = HookEvent::ALL.into_iter().filter(|e| e.on_site()).map(HookEvent::as_str).collect();
        assert_eq!(site, ["pre-install", "post-install", "pre-upgrade", "post-upgrade", "pre-delete", "post-delete", "test"]);
    }
}
