//! What a fidelity case is: an object and the patches applied to it, which both the
//! module's kustomize stage and `kubectl kustomize` must agree on.

pub(super) struct Case {
    pub name: &'static str,
    /// The object, as YAML.
    pub object: &'static str,
    /// Each patch's text and its target, as a YAML flow map.
    pub patches: &'static [(&'static str, Option<&'static str>)],
}
