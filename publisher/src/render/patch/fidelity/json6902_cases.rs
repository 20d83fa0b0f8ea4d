//! Fidelity cases for JSON 6902 patches (evanphx v4's semantics), targets as kustomize
//! selects them, and texts that are no patch. JSON 6902 patches are block lists: kustomize
//! reads text starting with `[` as JSON.

use super::case::Case;
use super::objects::{CONFIG, CONFIGMAP, DEPLOY, DEPLOYMENT};

pub(super) const CASES: &[Case] = &[
    // JSON 6902.
    Case {
        name: "json adds a label to every Deployment (Sveltos docs)",
        object: DEPLOYMENT,
        patches: &[(
            "- op: add\n  path: /metadata/labels/environment\n  value: production",
            Some("{group: apps, version: v1, kind: Deployment, name: '.*'}"),
        )],
    },
    Case {
        name: "json add under a missing parent fails",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}"#,
        patches: &[("- {op: add, path: /metadata/labels/x, value: y}", CONFIG)],
    },
    Case {
        name: "json escapes ~1 and ~0 (Sveltos docs' drift annotation)",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {a/b: x, "c~d": y}}}"#,
        patches: &[(
            concat!(
                "- {op: remove, path: /metadata/annotations/a~1b}\n- {op: add, path: /metadata/annotations/c~0d, value: z}\n",
                "- {op: add, path: /metadata/annotations/projectsveltos.io~1driftDetectionIgnore, value: ok}"
            ),
            CONFIG,
        )],
    },
    Case { name: "json remove of a missing key fails", object: CONFIGMAP, patches: &[("- {op: remove, path: /data/missing}", CONFIG)] },
    Case {
        name: "json replace of a missing key adds it",
        object: CONFIGMAP,
        patches: &[("- {op: replace, path: /data/missing, value: x}", CONFIG)],
    },
    Case {
        name: "json list indices: -, negative, leading zeros",
        object: CONFIGMAP,
        patches: &[(
            concat!(
                "- {op: add, path: /list/-, value: 4}\n",
                "- {op: add, path: /list/-1, value: 5}\n",
                "- {op: add, path: /list/01, value: 9}\n",
                "- {op: remove, path: /list/-2}\n",
                "- {op: replace, path: /list/0, value: 7}"
            ),
            CONFIG,
        )],
    },
    Case { name: "json index past the end fails", object: CONFIGMAP, patches: &[("- {op: add, path: /list/4, value: 4}", CONFIG)] },
    Case {
        name: "json move and copy, also of a missing key",
        object: CONFIGMAP,
        patches: &[(
            concat!(
                "- {op: move, from: /data/a, path: /data/z}\n",
                "- {op: copy, from: /data/b, path: /data/b2}\n",
                "- {op: copy, from: /data/missing, path: /data/n}\n",
                "- {op: copy, from: /list, path: /extra/list}"
            ),
            CONFIG,
        )],
    },
    Case {
        name: "json move into its own child fails",
        object: CONFIGMAP,
        patches: &[("- {op: move, from: /data, path: /data/x}", CONFIG)],
    },
    Case {
        name: "json tests that pass let the patch apply",
        object: DEPLOYMENT,
        patches: &[(
            concat!(
                "- {op: test, path: /spec/replicas, value: 2.0}\n",
                "- {op: test, path: /spec/missing, value: null}\n",
                "- {op: test, path: /spec/selector, value: {matchLabels: {app: web}}}\n",
                "- {op: add, path: /spec/paused, value: true}"
            ),
            DEPLOY,
        )],
    },
    Case {
        name: "json failed test fails",
        object: DEPLOYMENT,
        patches: &[("- {op: test, path: /spec/replicas, value: 3}\n- {op: add, path: /spec/paused, value: true}", DEPLOY)],
    },
    Case { name: "json unknown operation fails", object: CONFIGMAP, patches: &[("- {op: bogus, path: /data/a}", CONFIG)] },
    Case { name: "json operation without path fails", object: CONFIGMAP, patches: &[("- {op: add, value: 1}", CONFIG)] },
    Case {
        name: "json in JSON spelling",
        object: CONFIGMAP,
        patches: &[(r#"[{"op": "add", "path": "/data/j", "value": 1.0}, {"op": "add", "path": "/data/s"}]"#, CONFIG)],
    },
    Case {
        name: "json YAML reads YAML 1.1: yes is true, 010 is 8",
        object: CONFIGMAP,
        patches: &[(
            "- {op: add, path: /data/y, value: yes}\n- {op: add, path: /data/o, value: 010}\n- {op: add, path: /data/f, value: 1.0}",
            CONFIG,
        )],
    },
    Case { name: "json path without its leading slash", object: CONFIGMAP, patches: &[("- {op: add, path: data/k2, value: v}", CONFIG)] },
    Case { name: "json patch without a target fails", object: CONFIGMAP, patches: &[("- {op: add, path: /data/x, value: y}", None)] },
    Case {
        name: "json: annotations come out as strings, and none when emptied",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {only: x}, labels: {n: 5}}}"#,
        patches: &[("- {op: remove, path: /metadata/annotations/only}\n- {op: add, path: /metadata/labels/t, value: true}", CONFIG)],
    },
    Case {
        name: "json: non-string annotations come out as strings",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {n: 5, b: true, z: null}}}"#,
        patches: &[("- {op: add, path: /data, value: {a: b}}", CONFIG)],
    },
    // Targets as kustomize selects.
    Case {
        name: "a name regex is anchored",
        object: DEPLOYMENT,
        patches: &[
            ("- {op: add, path: /metadata/labels/short, value: x}", Some("{name: we}")),
            ("- {op: add, path: /metadata/labels/long, value: x}", Some("{name: 'we.*'}")),
            ("- {op: add, path: /metadata/labels/alt, value: x}", Some("{name: 'api|web'}")),
        ],
    },
    Case {
        name: "namespace default selects an object without namespace",
        object: CONFIGMAP,
        patches: &[("- {op: add, path: /data/x, value: y}", Some("{namespace: default}"))],
    },
    Case {
        name: "a cluster-scoped object has no namespace to match",
        object: r#"{apiVersion: v1, kind: Namespace, metadata: {name: n}}"#,
        patches: &[
            ("- {op: add, path: /metadata/labels, value: {empty: matched}}", Some("{namespace: '^$'}")),
            ("- {op: add, path: /metadata/labels, value: {any: matched}}", Some("{namespace: '.+'}")),
        ],
    },
    Case {
        name: "label and annotation selectors",
        object: DEPLOYMENT,
        patches: &[
            ("- {op: add, path: /metadata/labels/in, value: x}", Some("{labelSelector: 'app in (web,api)'}")),
            ("- {op: add, path: /metadata/labels/ne, value: x}", Some("{labelSelector: 'app!=web'}")),
            ("- {op: add, path: /metadata/labels/ann, value: x}", Some("{annotationSelector: 'owner=a,!missing'}")),
        ],
    },
    Case {
        name: "an invalid label selector fails",
        object: DEPLOYMENT,
        patches: &[("- {op: add, path: /metadata/labels/x, value: y}", Some("{labelSelector: 'app in web'}"))],
    },
    Case {
        name: "group, version and kind regexes",
        object: DEPLOYMENT,
        patches: &[
            ("- {op: add, path: /metadata/labels/gvk, value: x}", Some("{group: 'app.*', version: v1, kind: 'Deploy.*'}")),
            ("- {op: add, path: /metadata/labels/core, value: x}", Some("{group: '', version: v1, kind: Pod}")),
        ],
    },
    // Texts that are no patch.
    Case { name: "an empty patch fails", object: CONFIGMAP, patches: &[("   \n", CONFIG)] },
    Case { name: "[] reads as both kinds of patch and fails", object: CONFIGMAP, patches: &[("[]", CONFIG)] },
    Case { name: "invalid YAML fails", object: CONFIGMAP, patches: &[("kind: [unclosed", CONFIG)] },
    Case { name: "a flow list that is no JSON fails", object: CONFIGMAP, patches: &[("[{op: add, path: /data/x, value: y}]", CONFIG)] },
];
