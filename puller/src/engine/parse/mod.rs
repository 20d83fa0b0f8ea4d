//! Bundle files → desired objects, with no API call: manifests and their marks
//! (`manifest`), the defaults the API server would fill (`defaults`), and each part's
//! rules (`part`).

pub(crate) mod defaults;
pub(crate) mod helm_annotations;
pub(crate) mod manifest;
pub(crate) mod part;
