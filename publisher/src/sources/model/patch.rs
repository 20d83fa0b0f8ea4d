//! A patch as a profile writes it (`spec.patches`, or an entry of a `patchesFrom` source),
//! before templating. Compiling and applying it is the render's patch engine.

/// A `spec.patches` entry, before templating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePatch {
    pub patch: String,
    pub target: Option<Target>,
}

/// A `target` of `spec.patches` or of a patchesFrom entry: regular expressions (an empty
/// or missing field matches anything) and label-selector strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub annotation_selector: Option<String>,
}
