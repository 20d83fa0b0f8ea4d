//! The type kustomize's built-in schema is kept in: the generated table (`merge_keys`) is
//! written as [`Node`]s, which `schema` walks. It stands apart from both so that the
//! generated table does not depend on the code that reads it.

/// One node of the generated schema graph.
pub(super) enum Node {
    /// An object's fields that lead to a merged list, by name.
    Object(&'static [(&'static str, u16)]),
    /// A list merged by these keys (none: its scalars are merged), with its items' schema.
    List(&'static [&'static str], Option<u16>),
}
