//! Helpers shared by the end-to-end tests: where `hack/services.sh` started the services.
// Each test binary compiles this module and uses its own subset of it.
#![allow(dead_code)]

use std::path::PathBuf;

/// `$AIRLOCK_STATE/services.env` (default `~/.cache/airlock/run/services.env`), written by
/// `hack/services.sh start`.
pub fn services_env_path() -> PathBuf {
    let state = std::env::var_os("AIRLOCK_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/airlock/run"));
    state.join("services.env")
}

/// The value of `key`: from the environment, else from [`services_env_path`]. Panics with
/// how to start the services when neither has it: these tests fail, they never skip.
pub fn service_env(key: &str) -> String {
    if let Some(value) = std::env::var(key).ok().filter(|v| !v.is_empty()) {
        return value;
    }
    let path = services_env_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let found = text.lines().find_map(|line| {
        let line = line.trim();
        let (k, v) = line.strip_prefix("export ").unwrap_or(line).split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
    });
    found.filter(|v| !v.is_empty()).unwrap_or_else(|| {
        panic!(
            "{key} is neither in the environment nor in {}: start the test services with \
             `hack/services.sh start` (then `source {}`)",
            path.display(),
            path.display()
        )
    })
}
