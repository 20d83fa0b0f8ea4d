//! Fidelity cases for strategic merge patches: lists merged by key, directives, nulls,
//! quoting, custom resources, and what kustomize does around the merge.

use super::case::Case;
use super::objects::{CONFIG, CONFIGMAP, DEPLOY, DEPLOYMENT, WIDGET};

/// A strategic merge patch of a Deployment (its own name is ignored under a target).
macro_rules! deployment {
    ($($body:literal),+) => {
        concat!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ignored}\n", $($body),+)
    };
}

pub(super) const CASES: &[Case] = &[
    // Strategic merge: lists by key.
    Case {
        name: "containers merge by name, the patch's items first",
        object: DEPLOYMENT,
        patches: &[(
            deployment!("spec: {template: {spec: {containers: [{name: side, image: 'side:2'}, {name: extra, image: e}]}}}"),
            DEPLOY,
        )],
    },
    Case {
        name: "env merges by name, ports by containerPort and protocol",
        object: DEPLOYMENT,
        patches: &[(
            deployment!(
                "spec: {template: {spec: {containers: [{name: app, env: [{name: B, value: y}, {name: C, value: z}],",
                " ports: [{containerPort: 81}, {containerPort: 80, protocol: TCP}, {containerPort: 90}]}]}}}"
            ),
            DEPLOY,
        )],
    },
    Case {
        name: "$patch: delete removes a list item",
        object: DEPLOYMENT,
        patches: &[(deployment!("spec: {template: {spec: {containers: [{name: side, $patch: delete}]}}}"), DEPLOY)],
    },
    Case {
        name: "$patch: replace replaces a list",
        object: DEPLOYMENT,
        patches: &[(deployment!("spec: {template: {spec: {volumes: [{name: new, emptyDir: {}}, {$patch: replace}]}}}"), DEPLOY)],
    },
    Case {
        name: "$patch: replace replaces a map, $patch: delete deletes one",
        object: DEPLOYMENT,
        patches: &[(
            deployment!("spec: {selector: {$patch: delete}, template: {spec: {nodeSelector: {zone: a, $patch: replace}}}}"),
            DEPLOY,
        )],
    },
    Case {
        name: "$patch: replace in a list the object lacks",
        object: DEPLOYMENT,
        patches: &[(deployment!("spec: {template: {spec: {initContainers: [{name: init, image: i}, {$patch: replace}]}}}"), DEPLOY)],
    },
    Case {
        name: "$patch: delete deletes the object, and later patches find nothing",
        object: DEPLOYMENT,
        patches: &[
            ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ignored}\n$patch: delete", DEPLOY),
            ("- {op: add, path: /metadata/labels/x, value: y}", DEPLOY),
        ],
    },
    Case {
        name: "a patch's null deletes, the object's nulls stay",
        object: CONFIGMAP,
        patches: &[(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: null, new: null, d: {x: null, y: 1}}\nextra: {j: 2}",
            CONFIG,
        )],
    },
    Case {
        name: "finalizers merge by value, the patch's first",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, finalizers: [a, b]}}"#,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, finalizers: [c, a]}", CONFIG)],
    },
    Case {
        name: "custom resources: lists are replaced, maps merged",
        object: WIDGET,
        patches: &[(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {items: [{name: b, v: 2}], conf: {y: 2}}",
            Some("{kind: Widget}"),
        )],
    },
    Case {
        name: "an object of a built-in kind inside a custom resource merges by its schema",
        object: WIDGET,
        patches: &[(
            concat!(
                "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
                "spec: {template: {spec: {template: {spec: {containers: [{name: b, image: b2}]}}}}}"
            ),
            Some("{kind: Widget}"),
        )],
    },
    Case {
        name: "tolerations have no merge key and are replaced (Sveltos docs)",
        object: DEPLOYMENT,
        patches: &[(
            deployment!("spec: {template: {spec: {tolerations: [{key: dedicated, operator: Equal, value: edge, effect: NoSchedule}]}}}"),
            DEPLOY,
        )],
    },
    Case {
        name: "topologySpreadConstraints merge by topologyKey and whenUnsatisfiable",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a}], topologySpreadConstraints: [
            {topologyKey: zone, whenUnsatisfiable: DoNotSchedule, maxSkew: 1},
            {topologyKey: host, whenUnsatisfiable: ScheduleAnyway, maxSkew: 1}]}}"#,
        patches: &[(
            concat!(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {topologySpreadConstraints: [",
                "{topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, maxSkew: 2}, {topologyKey: host, maxSkew: 3}]}"
            ),
            Some("{kind: Pod}"),
        )],
    },
    Case {
        name: "Service ports merge by port and protocol",
        object: r#"{apiVersion: v1, kind: Service, metadata: {name: s},
            spec: {ports: [{port: 80, protocol: TCP, targetPort: 8080}, {port: 53, protocol: UDP}]}}"#,
        patches: &[(
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, targetPort: 9090}, {port: 53, protocol: TCP}]}",
            Some("{kind: Service}"),
        )],
    },
    Case {
        name: "a list item without its merge key",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p},
            spec: {containers: [{name: a, image: a}, {image: nameless}, {name: c, image: c}]}}"#,
        patches: &[("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: c2}]}", Some("{kind: Pod}"))],
    },
    Case {
        name: "volumes merge by name; $retainKeys and $setElementOrder stay as fields",
        object: DEPLOYMENT,
        patches: &[(
            deployment!(
                "spec: {strategy: {$retainKeys: [type], type: Recreate}, template: {spec: {",
                "$setElementOrder/containers: [{name: side}, {name: app}], containers: [{name: app, image: x}],",
                " volumes: [{name: data, emptyDir: null, configMap: {name: cm}}]}}}"
            ),
            DEPLOY,
        )],
    },
    Case {
        name: "a patch's null deletes a list, an absent container's delete does nothing",
        object: DEPLOYMENT,
        patches: &[(deployment!("spec: {template: {spec: {volumes: null, containers: [{name: gone, $patch: delete}]}}}"), DEPLOY)],
    },
    Case {
        name: "duplicate items and $patch: merge",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p, finalizers: [a, a, b]}, spec: {$patch: merge, containers: [
            {name: a, env: [{name: X, value: "1"}, {name: X, value: "2"}]}, {name: a, image: dup}]}}"#,
        patches: &[(
            concat!(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, finalizers: [b]}\n",
                "spec: {$patch: merge, containers: [{name: a, env: [{name: X, value: '3'}]}]}"
            ),
            Some("{kind: Pod}"),
        )],
    },
    Case {
        name: "$patch: replace on the whole document",
        object: DEPLOYMENT,
        patches: &[(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other, labels: {only: this}}\nspec: {replicas: 9}\n$patch: replace",
            DEPLOY,
        )],
    },
    Case {
        name: "the object's nulls inside merged items stay",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p},
            spec: {containers: [{name: a, args: null, resources: {limits: null}}]}}"#,
        patches: &[(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: x, resources: {requests: {cpu: 1}}}]}",
            Some("{kind: Pod}"),
        )],
    },
    Case {
        name: "a boolean over a quoted string, a string over a number",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "true", b: "x"}, n: 5}"#,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: false, b: true}\nn: 'five'", CONFIG)],
    },
    Case {
        name: "an untargeted patch of two documents for the same object",
        object: DEPLOYMENT,
        patches: &[(
            concat!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod, labels: {one: '1'}}\n---\n",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod, labels: {two: '2'}}"
            ),
            None,
        )],
    },
    Case {
        name: "after a JSON 6902 rename, targets and ids see both names",
        object: DEPLOYMENT,
        patches: &[
            ("- {op: replace, path: /metadata/name, value: renamed}", DEPLOY),
            ("- {op: add, path: /metadata/labels/by-old, value: x}", Some("{name: web}")),
            ("- {op: add, path: /metadata/labels/by-new, value: x}", Some("{name: renamed}")),
            ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod, labels: {old-id: x}}", None),
            ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: renamed, namespace: prod, labels: {new-id: x}}", None),
        ],
    },
    Case {
        name: "an untargeted patch without namespace for an object in default",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}"#,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {x: y}}", None)],
    },
    Case {
        name: "an untargeted patch of a cluster-scoped object ignores namespaces",
        object: r#"{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}, rules: []}"#,
        patches: &[(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: any, labels: {x: y}}",
            None,
        )],
    },
    Case {
        name: "a Helm-style Deployment gets a sidecar, env and a volume mount",
        object: r#"{apiVersion: apps/v1, kind: Deployment,
          metadata: {name: kyverno, namespace: kyverno, labels: {app.kubernetes.io/name: kyverno}},
          spec: {replicas: 1, selector: {matchLabels: {app: k}}, template: {metadata: {labels: {app: k}, annotations: {checksum: abc}},
            spec: {serviceAccountName: k, securityContext: {runAsNonRoot: true}, containers: [{name: kyverno, image: "ghcr.io/kyverno:1.12",
              args: [--v=2], ports: [{name: https, containerPort: 9443, protocol: TCP}], env: [{name: INIT, value: "false"}],
              volumeMounts: [{name: certs, mountPath: /certs}], resources: {limits: {memory: 384Mi}, requests: {cpu: 100m}},
              livenessProbe: {httpGet: {path: /health, port: 9443, scheme: HTTPS}}}],
              volumes: [{name: certs, secret: {secretName: k-tls}}]}}}}"#,
        patches: &[(
            concat!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kyverno}\nspec:\n  template:\n    spec:\n",
                "      containers:\n      - name: kyverno\n        args: [--v=4]\n",
                "        env: [{name: PROXY, value: 'http://proxy:3128'}]\n",
                "        volumeMounts: [{name: ca, mountPath: /etc/ssl/certs, readOnly: true}]\n",
                "        resources: {limits: {memory: 512Mi}}\n",
                "      - name: proxy\n        image: envoy:1\n      volumes: [{name: ca, configMap: {name: ca-bundle}}]\n"
            ),
            Some("{group: apps, kind: Deployment, name: kyverno, labelSelector: 'app.kubernetes.io/name=kyverno'}"),
        )],
    },
    // Strategic merge: what kustomize does around the merge.
    Case {
        name: "the patch's labels and annotations are strings",
        object: DEPLOYMENT,
        patches: &[(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {n: 5, t: true, z: null}, annotations: {q: 1.5}}",
            DEPLOY,
        )],
    },
    Case {
        name: "null or empty labels in a patch delete nothing",
        object: DEPLOYMENT,
        patches: &[(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: null, annotations: {}}\nspec: {replicas: 3}",
            DEPLOY,
        )],
    },
    Case {
        name: "a number over a quoted string becomes a string, over a plain one stays a number",
        object: DEPLOYMENT,
        patches: &[(
            deployment!(
                "spec: {replicas: '3', template: {spec: {containers: [{name: app, image: 5,",
                " env: [{name: A, value: 8080}, {name: B, value: true}]}]}}}"
            ),
            DEPLOY,
        )],
    },
    Case {
        name: "which strings yaml.v3 quotes decides what replaces them",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "a b", b: "a: b", c: "", d: "yes", e: "2001-12-14",
            f: "1:20", g: " lead", h: "-x", i: "- x", j: "x #y", k: "0x1F", l: "1_000", m: "abc", n: "?a", o: "a:b", p: "NaN",
            q: "08", r: "0.", s: "12:30:00", t: "\ttab", u: "é", v: "*a", w: "%a", x: "a]", y: "n", z: "1e"}}"#,
        patches: &[(
            concat!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1,",
                " i: 1, j: 1, k: 1, l: 1, m: 1, n: 1, o: 1, p: 1, q: 1, r: 1, s: 1, t: 1, u: 1, v: 1, w: 1, x: 1, y: 1, z: 1}"
            ),
            CONFIG,
        )],
    },
    Case {
        name: "strategic merge reads YAML 1.2: yes stays a string",
        object: CONFIGMAP,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {y1: yes, y2: on, h: 0x1F, o: 010}", CONFIG)],
    },
    Case {
        name: "a patch of another kind: the object keeps its kind, name and namespace",
        object: DEPLOYMENT,
        patches: &[("apiVersion: v1\nkind: Service\nmetadata: {name: other, namespace: elsewhere, labels: {x: y}}", DEPLOY)],
    },
    Case {
        name: "a namespace added to an object without one goes again",
        object: CONFIGMAP,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: added}", CONFIG)],
    },
    Case {
        name: "an untargeted patch applies by its own id",
        object: DEPLOYMENT,
        patches: &[("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod, labels: {u: v}}", None)],
    },
    Case {
        name: "an untargeted patch for another object fails",
        object: DEPLOYMENT,
        patches: &[("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other, namespace: prod}", None)],
    },
    Case {
        name: "an untargeted patch without apiVersion fails",
        object: DEPLOYMENT,
        patches: &[("kind: Deployment\nmetadata: {name: web, namespace: prod}", None)],
    },
    Case {
        name: "a targeted patch of two documents fails",
        object: DEPLOYMENT,
        patches: &[(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}",
            DEPLOY,
        )],
    },
    Case { name: "a map over a scalar fails", object: DEPLOYMENT, patches: &[(deployment!("spec: {replicas: {a: 1}}"), DEPLOY)] },
    Case { name: "an unknown directive fails", object: DEPLOYMENT, patches: &[(deployment!("spec: {template: {$patch: foo}}"), DEPLOY)] },
    Case {
        name: "a patch without metadata.name is no patch",
        object: DEPLOYMENT,
        patches: &[("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 1}", DEPLOY)],
    },
    Case {
        name: "a null item or a scalar in a merged list empties it",
        object: DEPLOYMENT,
        patches: &[(deployment!("spec: {template: {spec: {containers: [~], initContainers: [app]}}}"), DEPLOY)],
    },
    Case {
        name: "a scalar among the object's merged items fails",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [x, {name: a}]}}"#,
        patches: &[("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: b}]}", Some("{kind: Pod}"))],
    },
    Case {
        name: "a map among merged scalars fails",
        object: r#"{apiVersion: v1, kind: Pod, metadata: {name: p, finalizers: [f]}}"#,
        patches: &[("apiVersion: v1\nkind: Pod\nmetadata: {name: p, finalizers: [{a: 1}]}", Some("{kind: Pod}"))],
    },
    Case {
        name: "an object with an empty list item",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, list: [1, null]}"#,
        patches: &[("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {a: b}}", CONFIG)],
    },
    Case {
        name: "{} holds no document and fails as JSON 6902 where it applies",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {n: 5, b: true, m: {a: 1}}}}"#,
        patches: &[("{}", Some("{kind: Secret}")), ("{}", CONFIG)],
    },
    Case {
        name: "{} selecting nothing does nothing",
        object: r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {n: 5, b: true, m: {a: 1}}}}"#,
        patches: &[("{}", Some("{kind: Secret}"))],
    },
    Case {
        name: "patches apply in order",
        object: DEPLOYMENT,
        patches: &[
            ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {step: one}}", DEPLOY),
            ("- {op: add, path: /metadata/annotations/step, value: two}\n- {op: replace, path: /metadata/labels/step, value: two}", DEPLOY),
            ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {step: three}}\nspec: {replicas: 3}", DEPLOY),
        ],
    },
];
