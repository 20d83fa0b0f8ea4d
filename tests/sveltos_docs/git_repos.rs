//! The examples' Git repositories: each feature directory's `.repo/` tree (hidden, so
//! `--from-dir` does not read its manifests as management objects) committed to a fresh
//! repository of the test services' Git server. The feature's management objects name it
//! `http://git-server.invalid/<feature directory>`, an address that never resolves, which
//! the copied examples get replaced by the repository's.

use std::path::Path;

/// What the examples write for a feature's repository, before its directory name.
pub const GIT_SERVER: &str = "http://git-server.invalid";

/// `(placeholder, url)` for every feature of `examples` with a `.repo/` tree, each pushed
/// to a repository of its own on branch `main`. The trees are committed from a Git
/// directory outside them, so the examples are left as they are.
pub fn push_all(examples: &Path, scratch: &Path) -> Vec<(String, String)> {
    let features = examples.join("features");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&features).unwrap_or_else(|e| panic!("{}: {e}", features.display())) {
        let dir = entry.expect("a directory entry").path();
        let tree = dir.join(".repo");
        if !tree.is_dir() {
            continue;
        }
        let feature = dir.file_name().expect("a feature name").to_string_lossy().into_owned();
        let clone = scratch.join(&feature);
        airlock_e2e::git(scratch, &["init", "-q", "-b", "main", &clone.display().to_string()]);
        let git_dir_arg = format!("--git-dir={}", clone.join(".git").display());
        let url = airlock_e2e::new_git_repo(&airlock_e2e::publisher::unique(&format!("docs-{feature}")));
        for args in [&["add", "."][..], &["commit", "-q", "-m", &feature], &["push", "-q", &url, "main"]] {
            airlock_e2e::git(&tree, &[&[git_dir_arg.as_str(), "--work-tree=."][..], args].concat());
        }
        out.push((format!("{GIT_SERVER}/{feature}"), url));
    }
    out
}
