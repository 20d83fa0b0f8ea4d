//! Reading one object again and again until what it reports settles, or a deadline
//! passes: how a fired hook is waited for until it finished, and a release's objects
//! until they are ready. The pause between two reads doubles from `FIRST_POLL` up to
//! `MAX_POLL`, so a quick Job costs a few reads and a slow rollout one every two seconds.

use serde_json::Value;
use tokio::time::{Duration, Instant, sleep};

use crate::engine::api::kube_api::{Api, Served};
use crate::engine::model::error::ApiError;
use crate::engine::model::object::ObjectId;

const FIRST_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(2);

/// What one read of the object says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// It got where it was waited for.
    Done,
    /// Not yet, with where it stands.
    Pending(String),
    /// It will not get there, with why.
    Failed(String),
}

/// Why a wait ended without the object getting there.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unsettled {
    /// The object is gone.
    Gone,
    Failed(String),
    /// The deadline passed; where the object stood at the last read.
    TimedOut(String),
}

/// Reads `id` until `progress` says it is done or failed, at most `timeout`. An API
/// error ends the wait as it is.
pub(crate) async fn until(
    api: &Api,
    served: &Served,
    id: &ObjectId,
    timeout: Duration,
    progress: impl Fn(&Value) -> Progress,
) -> Result<Result<(), Unsettled>, ApiError> {
    let deadline = Instant::now() + timeout;
    let mut pause = FIRST_POLL;
    loop {
        let Some(live) = api.get(served, id.namespace.as_deref(), &id.name).await? else {
            return Ok(Err(Unsettled::Gone));
        };
        let standing = match progress(&live) {
            Progress::Done => return Ok(Ok(())),
            Progress::Failed(why) => return Ok(Err(Unsettled::Failed(why))),
            Progress::Pending(standing) => standing,
        };
        let now = Instant::now();
        if now >= deadline {
            return Ok(Err(Unsettled::TimedOut(standing)));
        }
        sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_POLL);
    }
}
