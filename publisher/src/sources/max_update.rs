//! `spec.maxUpdate` of a profile: how many of its matching clusters may take a new version
//! of it at once, as a count or a percentage of the matching clusters. Parsing and the
//! window arithmetic only; which clusters take the new version is `publish::rollout`'s.
//! Entry points: [`MaxUpdate::parse`], [`MaxUpdate::window`].

use serde_json::Value;

/// A parsed `spec.maxUpdate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxUpdate {
    Count(u64),
    Percent(u64),
}

impl MaxUpdate {
    /// Reads the field as the CRD declares it (int or string): `None` when unset, an error
    /// message for anything but a non-negative integer or `N%`.
    pub fn parse(value: &Value) -> Result<Option<MaxUpdate>, String> {
        match value {
            Value::Null => Ok(None),
            Value::Number(n) => n.as_u64().map(|n| Some(MaxUpdate::Count(n))).ok_or_else(|| format!("{n} is not a count of clusters")),
            Value::String(s) => {
                let (digits, percent) = match s.strip_suffix('%') {
                    Some(digits) => (digits, true),
                    None => (s.as_str(), false),
                };
                let n: u64 =
                    digits.parse().map_err(|_| format!("{s:?} is neither a count of clusters nor a percentage such as \"30%\""))?;
                Ok(Some(if percent { MaxUpdate::Percent(n) } else { MaxUpdate::Count(n) }))
            }
            other => Err(format!("{other} is neither a count of clusters nor a percentage")),
        }
    }

    /// How many of `matching` clusters may be updating at once. A percentage rounds up, as
    /// Kubernetes scales a `maxSurge`, so any percentage above zero lets one cluster
    /// through; zero (which would update nothing ever) means no limit, as unset does.
    pub fn window(self, matching: usize) -> usize {
        let matching64 = matching as u64;
        let n = match self {
            MaxUpdate::Count(n) => n,
            MaxUpdate::Percent(p) => (matching64.saturating_mul(p)).div_ceil(100),
        };
        if n == 0 { matching } else { usize::try_from(n.min(matching64)).unwrap_or(matching) }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn window(value: Value, matching: usize) -> usize {
        MaxUpdate::parse(&value).unwrap().map_or(matching, |m| m.window(matching))
    }

    #[test]
    fn an_absolute_count_is_the_window() {
        assert_eq!(window(json!(2), 5), 2);
        assert_eq!(window(json!("3"), 5), 3);
    }

    #[test]
    fn a_percentage_rounds_up() {
        assert_eq!(window(json!("50%"), 4), 2);
        assert_eq!(window(json!("30%"), 10), 3);
        assert_eq!(window(json!("30%"), 4), 2);
        assert_eq!(window(json!("1%"), 3), 1);
        assert_eq!(window(json!("100%"), 7), 7);
    }

    #[test]
    fn zero_or_unset_updates_every_cluster() {
        assert_eq!(window(Value::Null, 6), 6);
        assert_eq!(window(json!(0), 6), 6);
        assert_eq!(window(json!("0%"), 6), 6);
    }

    #[test]
    fn more_than_the_fleet_is_the_fleet() {
        assert_eq!(window(json!(10), 4), 4);
        assert_eq!(window(json!("250%"), 4), 4);
        assert_eq!(window(json!(3), 0), 0);
    }

    #[test]
    fn rejects_what_is_neither_a_count_nor_a_percentage() {
        for bad in [json!(-1), json!(1.5), json!("ten"), json!("%"), json!("-5%"), json!(true)] {
            assert!(MaxUpdate::parse(&bad).is_err(), "{bad}");
        }
    }
}
