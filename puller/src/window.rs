//! Whether this run may change the cluster: the bundle's active window (spec 5.6), judged
//! by the puller's clock at the reference time that expiry is judged at (the later of the
//! clock and the newest `issuedAt` the puller accepted, spec 8.10), so a clock set back
//! does not move the cluster to another point of its schedule than a bundle already
//! proved it reached. The window is signed; the store cannot open it. While it is closed
//! a sync verifies and changes nothing (`cmd::sync`); `plan` and `verify` say so.

use std::fmt;

use airlock_bundle::Floor;
use airlock_bundle::cron::Window;
use airlock_bundle::statement::ActiveWindow;
use jiff::Timestamp;

/// A bundle's window, and whether it is open at the run's reference time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowState {
    pub window: ActiveWindow,
    pub open: bool,
}

impl WindowState {
    /// The state of `window` (None: the bundle has none) for a run at `now` with `floor`.
    pub fn of(window: Option<&ActiveWindow>, floor: &Floor, now: Timestamp) -> Option<WindowState> {
        let window = window?;
        let reference = floor.highest_issued_at.map_or(now, |h| h.max(now));
        // Verification parsed both expressions (spec 8.6); one that does not parse keeps
        // the cluster as it is, the side that changes nothing.
        let open = Window::parse(&window.from, &window.to).is_ok_and(|w| w.is_open(reference));
        Some(WindowState { window: window.clone(), open })
    }

    /// Whether a run with this window (None: none) must change nothing.
    pub fn closed(state: Option<&WindowState>) -> bool {
        state.is_some_and(|s| !s.open)
    }
}

impl fmt::Display for WindowState {
    /// `open (from "0 20 * * 5" to "0 7 * * 1", UTC)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.open { "open" } else { "closed" };
        write!(f, "{state} (from {:?} to {:?}, UTC)", self.window.from, self.window.to)
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::Digest;

    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn judged_at_the_later_of_the_clock_and_the_newest_issued_at() {
        // Friday 20:00 to Monday 07:00; 2026-12-04 is a Friday, 2026-12-06 a Sunday.
        let weekend = ActiveWindow { from: "0 20 * * 5".into(), to: "0 7 * * 1".into() };
        let floor = Floor::default();
        assert_eq!(WindowState::of(None, &floor, at("2026-12-06T12:00:00Z")), None);
        let sunday = WindowState::of(Some(&weekend), &floor, at("2026-12-06T12:00:00Z")).unwrap();
        assert!(sunday.open && !WindowState::closed(Some(&sunday)));
        assert_eq!(sunday.to_string(), r#"open (from "0 20 * * 5" to "0 7 * * 1", UTC)"#);
        let wednesday = WindowState::of(Some(&weekend), &floor, at("2026-12-09T12:00:00Z")).unwrap();
        assert!(WindowState::closed(Some(&wednesday)) && wednesday.to_string().starts_with("closed"));
        assert!(!WindowState::closed(None), "no window: always open");
        // A clock reset to 1970 is judged at the newest issuedAt accepted, a Sunday.
        let accepted =
            Floor { applied: Some((3, Digest::of(b"v3"))), highest_issued_at: Some(at("2026-12-06T12:00:00Z")), keyring_version: None };
        assert!(WindowState::of(Some(&weekend), &accepted, Timestamp::UNIX_EPOCH).unwrap().open);
    }
}
