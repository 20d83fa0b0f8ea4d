//! The path grammar of bundle files (spec 2.2) and part names (spec 2.3).
//!
//! Paths are checked here once, by construction: everything downstream (tar headers, Git
//! trees, the puller's walk) can rely on a path that passed [`check_path`] being safe.

use crate::cluster::{is_dns_label, is_dns_subdomain};

/// Why a path or part name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    #[error("path {0:?} has a byte outside [A-Za-z0-9._-/]")]
    Charset(String),
    #[error("path {0:?} must have 2 to 8 components")]
    Depth(String),
    #[error("path {0:?} has an empty component or one starting with '.'")]
    Component(String),
    #[error("path {0:?} does not end with .yaml or .yaml.age")]
    Extension(String),
    #[error("path {0:?} is longer than 255 bytes or cannot be split for a ustar header")]
    Length(String),
    #[error("part name {0:?} is not ClusterProfile.<name>, Profile.<namespace>.<name>, RoleRequest.<name> or Airlock.system")]
    PartName(String),
}

pub const MAX_COMPONENTS: usize = 8;
pub const MAX_PATH: usize = 255;
const USTAR_NAME: usize = 100;
const USTAR_PREFIX: usize = 155;

/// Where the part reserved for the puller's own objects lives (spec 2.3).
pub const SYSTEM_PART: &str = "Airlock.system";

/// What an encrypted file's path ends with, after the `.yaml` of its plaintext (spec 2.7).
pub const SEALED_SUFFIX: &str = ".age";

/// Whether `path` names an encrypted file (spec 2.7).
pub fn is_sealed(path: &str) -> bool {
    path.ends_with(SEALED_SUFFIX)
}

/// Checks a bundle file path and returns its part name (its first component).
pub fn check_path(path: &str) -> Result<&str, PathError> {
    let err = |f: fn(String) -> PathError| Err(f(path.to_string()));
    if !path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/')) {
        return err(PathError::Charset);
    }
    let components: Vec<&str> = path.split('/').collect();
    if !(2..=MAX_COMPONENTS).contains(&components.len()) {
        return err(PathError::Depth);
    }
    if components.iter().any(|c| c.is_empty() || c.starts_with('.')) {
        return err(PathError::Component);
    }
    if !path.strip_suffix(SEALED_SUFFIX).unwrap_or(path).ends_with(".yaml") {
        return err(PathError::Extension);
    }
    if path.len() > MAX_PATH || ustar_split(path).is_none() {
        return err(PathError::Length);
    }
    check_part_name(components[0])?;
    Ok(components[0])
}

/// Checks a part name: `ClusterProfile.<name>`, `Profile.<namespace>.<name>`,
/// `RoleRequest.<name>` or the system part.
pub fn check_part_name(name: &str) -> Result<(), PathError> {
    let ok = match name.split_once('.') {
        _ if name == SYSTEM_PART => true,
        Some(("ClusterProfile" | "RoleRequest", rest)) => is_dns_subdomain(rest),
        Some(("Profile", rest)) => rest.split_once('.').is_some_and(|(ns, n)| is_dns_label(ns) && is_dns_subdomain(n)),
        _ => false,
    };
    if ok { Ok(()) } else { Err(PathError::PartName(name.to_string())) }
}

/// Splits a path into ustar (prefix, name) as spec 3.2 says: whole when it fits in
/// `name`, else at the first '/' after which at most 100 bytes remain.
pub fn ustar_split(path: &str) -> Option<(&str, &str)> {
    if path.len() <= USTAR_NAME {
        return Some(("", path));
    }
    let (i, _) = path.match_indices('/').find(|(i, _)| path.len() - i - 1 <= USTAR_NAME)?;
    let (prefix, name) = (&path[..i], &path[i + 1..]);
    (prefix.len() <= USTAR_PREFIX && !name.is_empty()).then_some((prefix, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_profile_paths() {
        assert_eq!(check_path("ClusterProfile.web/cm.default.web.yaml"), Ok("ClusterProfile.web"));
        assert_eq!(check_path("Profile.team-a.db/x/y.yaml"), Ok("Profile.team-a.db"));
        assert_eq!(check_path("Airlock.system/creds.yaml"), Ok("Airlock.system"));
        assert_eq!(check_path("ClusterProfile.web/Secret.web.db.yaml.age"), Ok("ClusterProfile.web"));
        assert_eq!(check_path("RoleRequest.team-a/Role.yaml"), Ok("RoleRequest.team-a"));
    }

    /// A `PathError` variant, by its constructor.
    type Variant = fn(String) -> PathError;

    #[test]
    fn rejects_bad_paths() {
        use PathError::*;
        let cases: &[(&str, Variant)] = &[
            ("ClusterProfile.web/../x.yaml", Component),
            ("ClusterProfile.web/./x.yaml", Component),
            ("/ClusterProfile.web/x.yaml", Component),
            ("ClusterProfile.web//x.yaml", Component),
            ("ClusterProfile.web/.hidden.yaml", Component),
            ("x.yaml", Depth),
            ("ClusterProfile.web/a/b/c/d/e/f/g/x.yaml", Depth),
            ("ClusterProfile.web/x.yml", Extension),
            ("ClusterProfile.web/x.age", Extension),
            ("ClusterProfile.web/x.yaml.age.age", Extension),
            ("ClusterProfile.web/x\\y.yaml", Charset),
            ("ClusterProfile.web/é.yaml", Charset),
            ("ClusterProfile.web/x y.yaml", Charset),
            ("Kustomize.web/x.yaml", PartName),
            ("Profile.onlynamespace/x.yaml", PartName),
            ("ClusterProfile.Web/x.yaml", PartName),
            ("RoleRequest.Team_A/x.yaml", PartName),
        ];
        for (path, want) in cases {
            let got = check_path(path).unwrap_err();
            assert_eq!(std::mem::discriminant(&got), std::mem::discriminant(&want(String::new())), "{path}: {got}");
        }
    }

    #[test]
    fn splits_long_paths_for_ustar() {
        let long = format!("ClusterProfile.web/{}/{}.yaml", "a".repeat(60), "b".repeat(60));
        let (prefix, name) = ustar_split(&long).unwrap();
        assert_eq!(format!("{prefix}/{name}"), long);
        assert!(name.len() <= 100 && prefix.len() <= 155);
        let unsplittable = format!("ClusterProfile.web/{}.yaml", "c".repeat(120));
        assert_eq!(check_path(&unsplittable), Err(PathError::Length(unsplittable.clone())));
    }
}
