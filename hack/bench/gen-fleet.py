#!/usr/bin/env python3
"""Writes a deterministic Sveltos fleet for `airlock-publisher publish --from-dir`.

The publisher benchmarks read it: N SveltosClusters labelled with
region (4 values), tier (3) and zone (10), and 20 ClusterProfiles with various selectors,
each referencing one ConfigMap of manifests (ConfigMaps, Services, Deployments of about
0.5-3 KB each). Five profiles are templates over `.Cluster` (name and labels), so their
output differs per cluster; the other fifteen render the same bytes for every cluster
they match.

The profile `zone-a` matches exactly the clusters of zone `a`, 10 % of the fleet, and is
the only user of the ConfigMap `zone-a-manifests`. `--change` writes that ConfigMap with
one value changed (and nothing else), the edit the changed re-publish measures.

Only the Python standard library is used; the same --seed and sizes give the same bytes.

Usage: gen-fleet.py --out DIR [--clusters N] [--seed S] [--change]
"""

import argparse
import os
import random

from genlib import indent, write

REGIONS = ["eu-west", "eu-central", "us-east", "ap-south"]
TIERS = ["gold", "silver", "bronze"]
ZONES = [chr(ord("a") + i) for i in range(10)]
# A YAML stream may hold at most 1,000 documents (the publisher's input limit).
CLUSTERS_PER_FILE = 500
NAMESPACE = "fleet"
TEMPLATE_ANNOTATION = "projectsveltos.io/template"

# (name, selector, templated). Selector is the clusterSelector as YAML flow text.
PROFILES = [
    ("base", "{matchExpressions: [{key: region, operator: Exists}]}", False),
    ("monitoring", "{matchExpressions: [{key: tier, operator: In, values: [gold, silver, bronze]}]}", False),
    ("region-eu-west", "{matchLabels: {region: eu-west}}", False),
    ("region-eu-central", "{matchLabels: {region: eu-central}}", False),
    ("region-us-east", "{matchLabels: {region: us-east}}", False),
    ("region-ap-south", "{matchLabels: {region: ap-south}}", False),
    ("tier-gold", "{matchLabels: {tier: gold}}", False),
    ("tier-silver", "{matchLabels: {tier: silver}}", False),
    ("tier-bronze", "{matchLabels: {tier: bronze}}", False),
    ("zone-a", "{matchLabels: {zone: a}}", False),
    ("zones-bcd", "{matchExpressions: [{key: zone, operator: In, values: [b, c, d]}]}", False),
    ("eu-premium", "{matchExpressions: [{key: region, operator: In, values: [eu-west, eu-central]}, {key: tier, operator: NotIn, values: [bronze]}]}", False),
    ("outer-zones", "{matchExpressions: [{key: zone, operator: NotIn, values: [a, b, c, d, e]}]}", False),
    ("us-gold", "{matchLabels: {region: us-east, tier: gold}}", False),
    ("no-canary", "{matchExpressions: [{key: canary, operator: DoesNotExist}, {key: zone, operator: In, values: [e, f]}]}", False),
    ("cluster-identity", "{matchExpressions: [{key: region, operator: Exists}]}", True),
    ("ingress", "{matchExpressions: [{key: zone, operator: Exists}]}", True),
    ("gold-backup", "{matchLabels: {tier: gold}}", True),
    ("edge-agent", "{matchExpressions: [{key: zone, operator: In, values: [f, g, h, i, j]}]}", True),
    ("eu-logging", "{matchExpressions: [{key: region, operator: In, values: [eu-west, eu-central]}]}", True),
]

# What a template may say about its cluster.
NAME = "{{ .Cluster.metadata.name }}"
REGION = '{{ index .Cluster.metadata.labels "region" }}'
ZONE = '{{ index .Cluster.metadata.labels "zone" | upper }}'
TIER = '{{ index .Cluster.metadata.labels "tier" | quote }}'


def words(rng, n):
    vocabulary = ["alpha", "bravo", "cache", "delta", "edge", "flux", "gamma", "hydra", "ion", "jetty", "kilo",
                  "lumen", "metric", "nova", "orbit", "pulse", "quota", "relay", "sigma", "tango", "umbra", "vector"]
    return "-".join(rng.choice(vocabulary) for _ in range(n))


def config_map(rng, name, ns, templated):
    entries = rng.randint(6, 40)
    lines = []
    for i in range(entries):
        lines.append(f"  {words(rng, 2)}-{i}: {words(rng, rng.randint(1, 6))!r}\n".replace("'", '"'))
    if templated:
        lines.append(f"  cluster: \"{NAME}\"\n  region: \"{REGION}\"\n  zone: \"{ZONE}\"\n")
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels: {{app.kubernetes.io/part-of: {ns}}}\ndata:\n" + "".join(lines))


def service(rng, name, ns, templated):
    ports = "".join(f"  - name: port-{p}\n    port: {p}\n    targetPort: {p + 1000}\n    protocol: TCP\n"
                    for p in sorted(rng.sample(range(80, 9000), rng.randint(1, 4))))
    note = f"  annotations: {{airlock.dev/cluster: \"{NAME}\"}}\n" if templated else ""
    return (f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels: {{app: {name}, app.kubernetes.io/part-of: {ns}}}\n{note}"
            f"spec:\n  type: ClusterIP\n  selector: {{app: {name}}}\n  ports:\n{ports}")


def deployment(rng, name, ns, templated):
    env = "".join(f"        - name: {words(rng, 1).upper()}_{i}\n          value: \"{words(rng, 3)}\"\n"
                  for i in range(rng.randint(2, 12)))
    if templated:
        env += f"        - name: CLUSTER_NAME\n          value: \"{NAME}\"\n        - name: CLUSTER_TIER\n          value: {TIER}\n"
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}, app.kubernetes.io/part-of: {ns}}}
spec:
  replicas: {rng.randint(1, 5)}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: {name}
        image: registry.example/{ns}/{name}:{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 50)}
        args: [--log-level=info, --listen=:{rng.randint(8000, 9000)}]
        resources:
          requests: {{cpu: {rng.randint(10, 500)}m, memory: {rng.randint(16, 512)}Mi}}
          limits: {{cpu: {rng.randint(500, 2000)}m, memory: {rng.randint(512, 2048)}Mi}}
        env:
{env}"""


def manifests_config_map(rng, profile, templated, changed):
    """The ConfigMap a profile references: one data key per manifest."""
    ns = profile
    count = rng.randint(3, 5) if templated else rng.randint(3, 10)
    makers = [config_map, service, deployment]
    data = []
    for i in range(count):
        maker = makers[i % 3] if i < 3 else rng.choice(makers)
        text = maker(rng, f"{profile}-{i}", ns, templated)
        if changed and i == 0:
            # One value of one manifest, so only this profile's part changes.
            text = text.replace("data:\n", "data:\n  bench-revision: \"2\"\n", 1)
        data.append((f"{i:02d}-{maker.__name__.replace('_', '-')}.yaml", text))
    annotations = f"  annotations: {{{TEMPLATE_ANNOTATION}: \"ok\"}}\n" if templated else ""
    body = "".join(f"  {key}: |\n{indent(text, 4)}" for key, text in data)
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {profile}-manifests\n  namespace: {NAMESPACE}\n"
            f"{annotations}data:\n{body}")


def cluster(rng, i):
    region, tier, zone = rng.choice(REGIONS), rng.choice(TIERS), ZONES[i % len(ZONES)]
    return f"""apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata:
  name: c{i:05d}
  namespace: {NAMESPACE}
  labels: {{region: {region}, tier: {tier}, zone: {zone}, env: production}}
  annotations: {{fleet.example/owner: team-{rng.randint(1, 40)}}}
spec:
  pullMode: true
status:
  version: v1.{rng.randint(26, 31)}.{rng.randint(0, 9)}
"""


def profile(name, selector, tier):
    return f"""apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: {name}
spec:
  clusterSelector: {selector}
  tier: {tier}
  syncMode: Continuous
  policyRefs:
  - {{kind: ConfigMap, namespace: {NAMESPACE}, name: {name}-manifests}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (files are replaced)")
    ap.add_argument("--clusters", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--change", action="store_true", help="write zone-a-manifests with one value changed")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    docs = [cluster(rng, i) for i in range(args.clusters)]
    for start in range(0, len(docs), CLUSTERS_PER_FILE):
        chunk = docs[start:start + CLUSTERS_PER_FILE]
        write(os.path.join(args.out, "clusters", f"{start // CLUSTERS_PER_FILE:03d}.yaml"), "---\n".join(chunk))
    # Distinct tiers: no two profiles ever tie on an object (they deploy distinct ones anyway).
    write(os.path.join(args.out, "profiles.yaml"),
          "---\n".join(profile(name, sel, 100 + i) for i, (name, sel, _) in enumerate(PROFILES)))
    for name, _, templated in PROFILES:
        # One generator per ConfigMap, seeded by name: --change touches only zone-a's bytes.
        cm_rng = random.Random(f"{args.seed}/{name}")
        changed = args.change and name == "zone-a"
        write(os.path.join(args.out, "configmaps", f"{name}.yaml"), manifests_config_map(cm_rng, name, templated, changed))


if __name__ == "__main__":
    main()
