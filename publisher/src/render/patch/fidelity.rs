//! The fidelity check: every case (`strategic_cases`, `json6902_cases`) goes through the
//! module's kustomize stage and through `kubectl kustomize` (kustomize v5.5 or later), and
//! both must give the same object, or both delete it, or both fail.
//!
//! kubectl is required, not optional: it is on developer machines and CI, and a missing
//! one fails the test with a message saying so. `KUBECTL` names another binary.
//!
//! Each case's kustomization starts with a no-op JSON 6902 patch (`test` of the kind),
//! which makes kustomize write the object out afresh with yaml.v3's quoting, as Sveltos
//! hands objects over; the case's patches follow, with their targets. Sveltos's own
//! pre-filters are not kustomize's and have unit tests of their own. Numbers compare by
//! value: the no-op patch reads them through Go's float64.

mod case;
mod json6902_cases;
mod objects;
mod strategic_cases;

use std::borrow::Cow;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use case::Case;

use super::json_patch::equal;
use super::kustomize::{self, Built};
use super::parsed::{ForObject, ParsedPatch, Patch};
use crate::sources::model::Target;

/// How many `kubectl kustomize` processes run at once.
const PARALLEL: usize = 4;

#[test]
fn patches_apply_as_kubectl_kustomize_applies_them() {
    let kubectl = kubectl();
    let cases: Vec<&Case> = strategic_cases::CASES.iter().chain(json6902_cases::CASES).collect();
    let mut failures = Vec::new();
    for chunk in cases.chunks(PARALLEL) {
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk.iter().map(|case| s.spawn(|| check(&kubectl, case))).collect();
            handles.into_iter().map(|h| h.join().expect("a case thread panicked")).collect()
        });
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(failures.is_empty(), "{} of {} cases differ from kubectl kustomize:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// The kubectl to compare with; panics with a clear message when there is none, or when
/// its kustomize is older than v5.5 (kubectl 1.32), whose merge this module follows: v5.0
/// still differs on untargeted multi-document patches and on `[]` and `{}`.
fn kubectl() -> String {
    let program = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    let output = Command::new(&program).args(["version", "--client"]).output().unwrap_or_else(|e| {
        let hint = "it needs kubectl with kustomize v5.5 or later on PATH, or KUBECTL set";
        panic!("the patch fidelity test compares with `{program} kustomize`: {hint}: {e}")
    });
    let version = String::from_utf8_lossy(&output.stdout);
    let kustomize = version.lines().find_map(|l| l.strip_prefix("Kustomize Version: v")).unwrap_or_default();
    let mut numbers = kustomize.split(['.', '-']).map(|n| n.parse::<u32>().unwrap_or_default());
    let (major, minor) = (numbers.next().unwrap_or_default(), numbers.next().unwrap_or_default());
    assert!(major > 5 || (major == 5 && minor >= 5), "`{program} version --client` must show kustomize v5.5 or later:\n{version}");
    program
}

fn yaml(text: &str) -> Value {
    let mut docs = crate::yaml::parse_documents(text).unwrap_or_else(|e| panic!("a case's YAML: {e}\n{text}"));
    assert_eq!(docs.len(), 1, "one document in {text}");
    docs.remove(0)
}

fn target(value: &Value) -> Target {
    let get = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Target {
        group: get("group"),
        version: get("version"),
        kind: get("kind"),
        name: get("name"),
        namespace: get("namespace"),
        label_selector: get("labelSelector"),
        annotation_selector: get("annotationSelector"),
    }
}

fn check(kubectl: &str, case: &Case) -> Result<(), String> {
    let object = yaml(case.object);
    let targets: Vec<Option<Value>> = case.patches.iter().map(|(_, t)| t.map(yaml)).collect();
    let patches: Vec<Patch> = case
        .patches
        .iter()
        .zip(&targets)
        .enumerate()
        .map(|(i, ((text, _), t))| Patch { source: format!("patch {i}"), text: text.to_string(), target: t.as_ref().map(target) })
        .collect();
    let parsed = ParsedPatch::all(&patches);
    let whole: Vec<ForObject<'_>> = parsed.iter().map(|patch| ForObject { patch, body: Cow::Borrowed(&patch.body) }).collect();
    let ours = kustomize::build(&object, &whole);
    let theirs = kubectl_kustomize(kubectl, &object, case, &targets);
    let agree = match (&ours, &theirs) {
        (Ok(Built::Object(a)), Ok(Built::Object(b))) => equal(a, b),
        (Ok(Built::Deleted), Ok(Built::Deleted)) | (Err(_), Err(_)) => true,
        _ => false,
    };
    if agree {
        return Ok(());
    }
    let show = |r: Result<Built, String>| match r {
        Ok(Built::Object(v)) => serde_json::to_string_pretty(&v).expect("JSON"),
        Ok(Built::Deleted) => "(deleted)".to_string(),
        Err(e) => format!("error: {e}"),
    };
    Err(format!("case `{}`:\n ours: {}\n kubectl: {}", case.name, show(ours.map_err(|e| e.to_string())), show(theirs)))
}

fn kubectl_kustomize(kubectl: &str, object: &Value, case: &Case, targets: &[Option<Value>]) -> Result<Built, String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, value: &Value| std::fs::write(dir.path().join(name), value.to_string()).expect("write");
    write("object.json", object);
    let normalize = json!([{"op": "test", "path": "/kind", "value": object.get("kind").cloned().unwrap_or(Value::Null)}]);
    let mut patches = vec![json!({"patch": normalize.to_string(), "target": {}})];
    for ((text, _), target) in case.patches.iter().zip(targets) {
        let mut patch = json!({"patch": text});
        if let Some(target) = target {
            patch["target"] = target.clone();
        }
        patches.push(patch);
    }
    write("kustomization.yaml", &json!({"resources": ["object.json"], "patches": patches}));
    run(kubectl, dir.path())
}

fn run(kubectl: &str, dir: &Path) -> Result<Built, String> {
    let output = Command::new(kubectl)
        .args(["kustomize", "--load-restrictor", "LoadRestrictionsNone"])
        .arg(dir)
        .output()
        .map_err(|e| format!("running {kubectl}: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    let text = String::from_utf8(output.stdout).map_err(|e| e.to_string())?;
    let mut docs = crate::yaml::parse_documents(&text).map_err(|e| format!("kustomize's output: {e}\n{text}"))?;
    match docs.len() {
        0 => Ok(Built::Deleted),
        1 => Ok(Built::Object(docs.remove(0))),
        n => Err(format!("kustomize wrote {n} objects")),
    }
}
