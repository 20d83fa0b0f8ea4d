//! The checks of a part (spec 5.11), run against this cluster: `preDeployChecks` before
//! a part is applied, `validateHealths` after, `preDeleteChecks` and `postDeleteChecks`
//! around the pruning of a part that left the bundle. The caller decides what a failure
//! holds back; this module runs checks and says which failed and why.
//!
//! One check lists its objects (`objects`) and judges each: its Lua script (the
//! `airlock-lua` sandbox) must call it healthy and one of its CEL rules (`cel`) must be
//! true, when it has them. Before deploying, a check that lists no object fails (there is
//! nothing healthy); around a delete it passes, since those checks usually wait for
//! objects to be gone. A check without objects runs its script once on the metrics alone
//! (`metrics`); a Job check runs its Job (`job`). The checks of a list run in order and
//! the first failure ends the list, as in Sveltos. A script's message, or its error, about
//! a `Secret` or an object the bundle carried encrypted is withheld: it can quote the data.

pub(crate) mod cel;
mod contained;
mod job;
mod metrics;
pub(crate) mod objects;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::{Check, ProfileEntry, check_list};
use airlock_lua::{LuaBudget, LuaSource, check_health_syntax, evaluate_health};
pub use contained::refusals;

use crate::engine::DesiredObject;

/// When a list of checks runs, which decides whether an empty list of objects passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    PreDeploy,
    ValidateHealths,
    PreDelete,
    PostDelete,
}

impl Stage {
    /// The list's name in the statement and the profile.
    pub fn list(self) -> &'static str {
        match self {
            Stage::PreDeploy => check_list::PRE_DEPLOY,
            Stage::ValidateHealths => check_list::VALIDATE_HEALTHS,
            Stage::PreDelete => check_list::PRE_DELETE,
            Stage::PostDelete => check_list::POST_DELETE,
        }
    }

    fn around_delete(self) -> bool {
        matches!(self, Stage::PreDelete | Stage::PostDelete)
    }
}

/// A check that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub part: String,
    pub stage: Stage,
    pub check: String,
    pub why: String,
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "part {}: {} {:?}: {}", self.part, self.stage.list(), self.check, self.why)
    }
}

/// Compiles every check of `profile`'s part: a CEL rule or a script that does not parse
/// refuses the bundle. Returns the field and why.
pub fn validate(profile: &ProfileEntry) -> Result<(), (String, String)> {
    for (list, check) in profile.checks.all() {
        let field = format!("{list} {:?}", check.name);
        cel::Rules::compile(&check.cel).map_err(|why| (field.clone(), why))?;
        if let Some(script) = &check.script {
            let source = LuaSource { profile: &profile.name, resource: &field, key: "script" };
            check_health_syntax(&source, script, &LuaBudget::DEFAULT).map_err(|e| (field.clone(), e.to_string()))?;
        }
    }
    Ok(())
}

/// Runs checks against one cluster.
pub struct Checker<'a> {
    pub client: &'a kube::Client,
    /// The clients that write as tenants: a Job check of a tenant's part runs as it.
    pub tenants: &'a crate::engine::Tenants,
    /// Each tenant part's ServiceAccount.
    pub tenant_parts: &'a BTreeMap<String, airlock_bundle::statement::ServiceAccountRef>,
    /// This cluster's `airlock.dev/cluster` value, which a Job check's Job carries.
    pub cluster_label: String,
    /// How long `validateHealths` may take to pass.
    pub timeout: Duration,
    /// The objects read from encrypted files, named as [`objects::name_of`] names them.
    pub sealed: BTreeSet<String>,
}

/// What a check says instead of a script's words about a `Secret` or a sealed object.
const WITHHELD: &str = "(the script's message is withheld: the object is a Secret or came encrypted)";

/// The names of `desired`'s objects read from encrypted files, for [`Checker::sealed`].
pub fn sealed(desired: &[DesiredObject]) -> BTreeSet<String> {
    let named = |o: &DesiredObject| match &o.id.namespace {
        Some(namespace) => format!("{} {namespace}/{}", o.id.kind, o.id.name),
        None => format!("{} {}", o.id.kind, o.id.name),
    };
    desired.iter().filter(|o| o.sealed).map(named).collect()
}

/// How often failing `validateHealths` are tried again.
const RETRY: Duration = Duration::from_secs(2);

impl Checker<'_> {
    /// Runs `checks` of `part` once, in order, up to the first that fails.
    pub async fn run(&self, part: &str, stage: Stage, checks: &[Check]) -> Option<Failed> {
        for check in checks {
            if let Err(why) = self.one(part, stage, check).await {
                return Some(Failed { part: part.to_string(), stage, check: check.name.clone(), why });
            }
        }
        None
    }

    /// Runs `part`'s `validateHealths` until they all pass or the timeout passes; the
    /// failure of the last try, if it failed.
    pub async fn until_healthy(&self, part: &str, checks: &[Check]) -> Option<Failed> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let failed = self.run(part, Stage::ValidateHealths, checks).await?;
            // A Job that failed ran to its end; running it again would only repeat it.
            let by_job = checks.iter().any(|c| c.name == failed.check && c.job.is_some());
            if by_job || tokio::time::Instant::now() + RETRY > deadline {
                return Some(failed);
            }
            tracing::debug!("{failed}; trying again");
            tokio::time::sleep(RETRY).await;
        }
    }

    async fn one(&self, part: &str, stage: Stage, check: &Check) -> Result<(), String> {
        if let Some(job) = &check.job {
            let writer = match self.tenant_parts.get(part) {
                Some(account) => self.tenants.writer(account).map_err(|e| e.to_string())?,
                None => self.client,
            };
            return job::run(self.client, writer, job, &self.cluster_label).await;
        }
        let values = match &check.metrics {
            Some(m) => metrics::fetch(self.client, m).await?,
            None => BTreeMap::new(),
        };
        let resource = format!("{} {:?}", stage.list(), check.name);
        let source = LuaSource { profile: part, resource: &resource, key: "script" };
        let judge = |object: Option<&serde_json::Value>| -> Result<(), String> {
            let Some(script) = &check.script else { return Ok(()) };
            let withheld = |message: String| match object {
                Some(o) if is_secret(o) || self.sealed.contains(&objects::name_of(o)) => WITHHELD.to_string(),
                _ => message,
            };
            let health = evaluate_health(&source, script, object, &values, &LuaBudget::DEFAULT).map_err(|e| withheld(e.to_string()))?;
            match (health.healthy, object) {
                (true, _) => Ok(()),
                (false, Some(o)) => Err(format!("{} is not healthy: {}", objects::name_of(o), withheld(health.message))),
                (false, None) => Err(format!("not healthy: {}", health.message)),
            }
        };
        let Some(selection) = &check.objects else { return judge(None) };
        let rules = cel::Rules::compile(&check.cel)?;
        let Some(listed) = objects::list(self.client, selection).await? else { return Ok(()) };
        if listed.is_empty() && !stage.around_delete() {
            return Err(format!("found no {}", objects::describe(selection)));
        }
        for object in &listed {
            judge(Some(object))?;
            if !check.cel.is_empty() && rules.matched(object).is_none() {
                return Err(format!("{} is not healthy: none of its CEL rules is true", objects::name_of(object)));
            }
        }
        Ok(())
    }
}
