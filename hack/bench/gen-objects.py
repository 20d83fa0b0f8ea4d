#!/usr/bin/env python3
"""Writes one cluster's deterministic workload twice: as Sveltos input for
`airlock-publisher publish --from-dir`, and as plain manifests for `kubectl apply -f`.

The puller and verify benchmarks read it. N objects (a multiple of 10) are
60 % ConfigMaps, 10 % Services, 20 % Deployments and 10 % custom resources, one of which
is the CustomResourceDefinition of the others: N=1,000 gives 600 ConfigMaps, 100 Services,
200 Deployments, 1 CRD and 99 Widgets. Namespaced objects are spread over NAMESPACES
namespaces, which the caller creates (they are not among the N objects).

Layout of --out DIR:
  management/   one SveltosCluster (CLUSTER, pull mode), one ClusterProfile per namespace
                plus one for the CRD, each with a ConfigMap holding one object per data key
  kubectl/00-crds/     the CRD, to apply and wait for before the rest
  kubectl/10-objects/  every other object, one file per namespace
  namespaces.yaml      the namespaces the objects live in, for the caller to create

--namespace-prefix names the namespaces (PREFIX0 to PREFIX9), so that two data sets can
live side by side; --sync-mode sets every profile's syncMode; --target-bytes pads the
ConfigMaps until the manifests add up to about that many bytes (the verify benchmark's
bundle). Only the Python standard library is used; the same arguments give the same bytes.

Usage: gen-objects.py --out DIR [--objects N] [--seed S] [--namespace-prefix P] [--sync-mode MODE]
                      [--target-bytes B]
"""

import argparse
import os
import random
import shutil

from genlib import indent, write

CLUSTER_NAMESPACE = "airlock-bench"
CLUSTER_NAME = "managed"
NAMESPACE_PREFIX = "airlock-bench-app-"
NAMESPACES = 10
CRD_GROUP = "bench.airlock.dev"
CRD_PLURAL = "widgets"
SELECTOR_LABEL = "airlock.dev/bench"
# A YAML stream may hold at most 1,000 documents and a bundle file one object per path,
# so each object gets its own data key.
VOCABULARY = ["alpha", "bravo", "cache", "delta", "edge", "flux", "gamma", "hydra", "ion", "jetty", "kilo",
              "lumen", "metric", "nova", "orbit", "pulse", "quota", "relay", "sigma", "tango", "umbra", "vector"]


def words(rng, n):
    return "-".join(rng.choice(VOCABULARY) for _ in range(n))


def config_map(rng, name, ns, pad):
    lines = "".join(f"  {words(rng, 2)}-{i}: \"{words(rng, rng.randint(1, 6))}\"\n" for i in range(rng.randint(4, 14)))
    if pad:
        # Many short lines rather than one long value: what a real config file looks like.
        payload, size = [], 0
        while size < pad:
            payload.append(f"    {words(rng, 8)}\n")
            size += len(payload[-1])
        lines += "  payload.txt: |\n" + "".join(payload)
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels:\n    app.kubernetes.io/part-of: {ns}\ndata:\n{lines}")


def service(rng, name, ns, _pad):
    # Headless: the test API servers' service range is a /24, which 500 Services (and the
    # other tests sharing the cluster) would exhaust.
    ports = "".join(f"  - name: port-{p}\n    port: {p}\n    targetPort: {p + 1000}\n    protocol: TCP\n"
                    for p in sorted(rng.sample(range(80, 9000), rng.randint(1, 3))))
    return (f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels:\n    app: {name}\nspec:\n  type: ClusterIP\n  clusterIP: None\n  selector:\n    app: {name}\n  ports:\n{ports}")


def deployment(rng, name, ns, _pad):
    env = "".join(f"        - name: {words(rng, 1).upper()}_{i}\n          value: \"{words(rng, 3)}\"\n"
                  for i in range(rng.randint(2, 8)))
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels:
    app: {name}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: main
        image: registry.example/bench/{name}:1.{rng.randint(0, 20)}.{rng.randint(0, 50)}
        args: ["--listen=:{rng.randint(8000, 9000)}"]
        resources:
          requests:
            cpu: {rng.randint(10, 500)}m
            memory: {rng.randint(16, 512)}Mi
        env:
{env}"""


def widget(rng, name, ns, _pad):
    return (f"apiVersion: {CRD_GROUP}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"spec:\n  size: {rng.randint(1, 100)}\n  color: {rng.choice(VOCABULARY)}\n"
            f"  tags: [{', '.join(words(rng, 1) for _ in range(rng.randint(1, 4)))}]\n")


CRD = f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {CRD_PLURAL}.{CRD_GROUP}
spec:
  group: {CRD_GROUP}
  scope: Namespaced
  names:
    kind: Widget
    listKind: WidgetList
    plural: {CRD_PLURAL}
    singular: widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}
              color: {{type: string}}
              tags: {{type: array, items: {{type: string}}}}
"""


def objects(rng, count, pad, prefix=NAMESPACE_PREFIX):
    """(namespace, data key, manifest) of every object but the CRD, in a fixed order."""
    tenth = count // 10
    plan = [(config_map, "cm", 6 * tenth), (service, "svc", tenth), (deployment, "deploy", 2 * tenth),
            (widget, "widget", tenth - 1)]
    out = []
    for maker, short, n in plan:
        for i in range(n):
            ns = f"{prefix}{i % NAMESPACES}"
            name = f"{short}-{i:05d}"
            out.append((ns, f"{name}.yaml", maker(rng, name, ns, pad if maker is config_map else 0)))
    return out


def holder(name, entries):
    """The management ConfigMap a profile references: one data key per manifest."""
    body = "".join(f"  {key}: |\n{indent(text, 4)}" for key, text in entries)
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {CLUSTER_NAMESPACE}\n"
            f"data:\n{body}")


def profile(name, sync_mode):
    return f"""apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: {name}
spec:
  clusterSelector:
    matchLabels: {{{SELECTOR_LABEL}: "true"}}
  syncMode: {sync_mode}
  policyRefs:
  - {{kind: ConfigMap, namespace: {CLUSTER_NAMESPACE}, name: {name}-manifests}}
"""


CLUSTER = f"""apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata:
  name: {CLUSTER_NAME}
  namespace: {CLUSTER_NAMESPACE}
  labels: {{{SELECTOR_LABEL}: "true"}}
spec:
  pullMode: true
"""


def pad_for(args):
    """Bytes of padding per ConfigMap that bring the total near --target-bytes."""
    if not args.target_bytes:
        return 0
    made = objects(random.Random(args.seed), args.objects, 0, args.namespace_prefix)
    base = sum(len(text) for _, _, text in made) + len(CRD)
    return max(0, (args.target_bytes - base) // (6 * (args.objects // 10)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (replaced)")
    ap.add_argument("--objects", type=int, default=1_000, help="a multiple of 10, at least 20")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--namespace-prefix", default=NAMESPACE_PREFIX, help="the namespaces' names before their number")
    ap.add_argument("--sync-mode", default="Continuous",
                    choices=["OneTime", "Continuous", "ContinuousWithDriftDetection", "DryRun"])
    ap.add_argument("--target-bytes", type=int, default=0, help="pad ConfigMaps to about this many manifest bytes")
    args = ap.parse_args()
    if args.objects % 10 or args.objects < 20:
        ap.error("--objects must be a multiple of 10, at least 20")

    shutil.rmtree(args.out, ignore_errors=True)
    rng = random.Random(args.seed)
    made = objects(rng, args.objects, pad_for(args), args.namespace_prefix)
    per_ns = {}
    for ns, key, text in made:
        per_ns.setdefault(ns, []).append((key, text))

    mgmt = os.path.join(args.out, "management")
    write(os.path.join(mgmt, "cluster.yaml"), CLUSTER)
    names = ["bench-crds"] + [f"bench-{ns.removeprefix(args.namespace_prefix)}" for ns in sorted(per_ns)]
    write(os.path.join(mgmt, "profiles.yaml"), "---\n".join(profile(n, args.sync_mode) for n in names))
    write(os.path.join(mgmt, "configmaps", "bench-crds.yaml"), holder("bench-crds-manifests", [("crd.yaml", CRD)]))
    for name, ns in zip(names[1:], sorted(per_ns)):
        write(os.path.join(mgmt, "configmaps", f"{name}.yaml"), holder(f"{name}-manifests", per_ns[ns]))

    write(os.path.join(args.out, "namespaces.yaml"),
          "---\n".join(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n" for ns in sorted(per_ns)))
    kubectl = os.path.join(args.out, "kubectl")
    write(os.path.join(kubectl, "00-crds", "crd.yaml"), CRD)
    for ns, entries in sorted(per_ns.items()):
        write(os.path.join(kubectl, "10-objects", f"{ns}.yaml"), "---\n".join(text for _, text in entries))


if __name__ == "__main__":
    main()
