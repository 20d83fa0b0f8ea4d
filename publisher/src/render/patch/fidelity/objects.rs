//! The objects and targets the fidelity cases share.

pub(super) const DEPLOYMENT: &str = r#"{apiVersion: apps/v1, kind: Deployment,
  metadata: {name: web, namespace: prod, labels: {app: web}, annotations: {owner: a}},
  spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {
    containers: [
      {name: app, image: "nginx:1", ports: [{containerPort: 80}, {containerPort: 81, protocol: UDP}],
       env: [{name: A, value: "1"}, {name: B, value: x}]},
      {name: side, image: "side:1"}],
    volumes: [{name: data, emptyDir: {}}], tolerations: [{key: a, operator: Exists}], nodeSelector: {disk: ssd}}}}}"#;

pub(super) const CONFIGMAP: &str = r#"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {a: b}},
  data: {a: "1", b: "2", k: v}, list: [1, 2, 3], binaryData: null, extra: {keep: null, j: 1}}"#;

pub(super) const WIDGET: &str = r#"{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: prod},
  spec: {items: [{name: a, v: 1}, {name: b, v: 1}], conf: {x: 1},
    template: {apiVersion: apps/v1, kind: Deployment, spec: {template: {spec: {
      containers: [{name: a, image: a}, {name: b, image: b}]}}}}}}"#;

pub(super) const DEPLOY: Option<&str> = Some("{kind: Deployment}");
pub(super) const CONFIG: Option<&str> = Some("{kind: ConfigMap}");
