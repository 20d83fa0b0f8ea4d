//! Where a ClusterConfiguration's status keeps each profile: the profile a part or a
//! status section names, and the feature entries of a section. Shared by what reads
//! deployed objects (`addons`) and Helm releases (`charts`) out of it.

use airlock_bundle::ClusterId;
use serde_json::Value;

/// A ClusterProfile or a Profile, as a part name (spec 2.3) names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileRef {
    ClusterProfile(String),
    Profile { namespace: String, name: String },
}

impl ProfileRef {
    /// The profile of part `part`; `None` for `Airlock.system` and what is not a part name.
    pub fn of_part(part: &str) -> Option<ProfileRef> {
        if let Some(name) = part.strip_prefix("ClusterProfile.") {
            return Some(ProfileRef::ClusterProfile(name.to_string()));
        }
        let (namespace, name) = part.strip_prefix("Profile.")?.split_once('.')?;
        Some(ProfileRef::Profile { namespace: namespace.to_string(), name: name.to_string() })
    }

    pub fn name(&self) -> &str {
        match self {
            ProfileRef::ClusterProfile(name) | ProfileRef::Profile { name, .. } => name,
        }
    }
}

/// The profile of part `part`, when it is one that can match `cluster` (a Profile only
/// matches clusters of its own namespace).
pub fn ours(part: &str, cluster: &ClusterId) -> Option<ProfileRef> {
    ProfileRef::of_part(part).filter(|p| match p {
        ProfileRef::Profile { namespace, .. } => namespace == cluster.namespace(),
        ProfileRef::ClusterProfile(_) => true,
    })
}

/// Each profile's section of a ClusterConfiguration status, with the profile it names.
pub fn sections<'a>(status: &'a Value, cluster: &'a ClusterId) -> impl Iterator<Item = (ProfileRef, &'a Value)> + 'a {
    let lists = [("clusterProfileResources", "clusterProfileName"), ("profileResources", "profileName")];
    lists.into_iter().flat_map(move |(list, name_field)| {
        status[list].as_array().into_iter().flatten().filter_map(move |section| {
            let name = section[name_field].as_str()?.to_string();
            let profile = match list {
                "clusterProfileResources" => ProfileRef::ClusterProfile(name),
                _ => ProfileRef::Profile { namespace: cluster.namespace().to_string(), name },
            };
            Some((profile, section))
        })
    })
}

/// The entries of list `field` (`resources`, `charts`) of every feature of a section.
pub fn feature_entries<'a>(section: &'a Value, field: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    section["Features"].as_array().into_iter().flatten().flat_map(move |f| f[field].as_array().into_iter().flatten())
}
