#!/usr/bin/env python3
"""Writes a deterministic fleet whose one profile deploys 20 Secrets to every cluster.

The confidential-bundle benchmark reads it with `airlock-publisher publish --from-dir`:
N SveltosClusters (namespace `fleet`, label `bench: secrets`, pull mode) and one
ClusterProfile selecting them, whose ConfigMap holds 20 Secrets of 200-500 bytes of data
each, one data key per Secret. The ConfigMap is a template that puts the cluster's name in
every Secret, so each cluster's Secrets differ from every other's, as real credentials
would. With --recipient R every cluster is annotated `airlock.dev/age-recipient: R`, which
makes the publisher encrypt each of those Secret files to R; without it every cluster is
annotated `airlock.dev/plaintext-secrets: allow` and the same fleet is published in clear.

Only the Python standard library is used; the same --seed and sizes give the same bytes.

Usage: gen-secrets.py --out DIR [--clusters N] [--seed S] [--recipient AGE1...]
"""

import argparse
import os
import random
import string

from genlib import indent, write

NAMESPACE = "fleet"
PROFILE = "bench-secrets"
SECRETS = 20
# A YAML stream may hold at most 1,000 documents (the publisher's input limit).
CLUSTERS_PER_FILE = 500
TEMPLATE_ANNOTATION = "projectsveltos.io/template"
RECIPIENT_ANNOTATION = "airlock.dev/age-recipient"
NAME = "{{ .Cluster.metadata.name }}"


def token(rng, n):
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def secret(rng, i):
    """A Secret whose stringData (200-500 bytes once rendered) names its cluster."""
    name = f"app-{i:02d}-credentials"
    budget = rng.randint(200, 500)
    entries = [f"cluster: \"{NAME}\"\n", f"username: \"svc-{i:02d}-{NAME}\"\n"]
    size = 2 * (len("c00000") + 12)
    k = 0
    while size < budget:
        value = token(rng, rng.randint(24, 64))
        line = f"key-{k:02d}: \"{value}\"\n"
        entries.append(line)
        size += len(line)
        k += 1
    data = "".join(entries)
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}-apps\n"
            f"  labels: {{app.kubernetes.io/part-of: bench-secrets}}\ntype: Opaque\nstringData:\n"
            + indent(data, 2))


def secrets_config_map(rng):
    body = "".join(f"  {i:02d}-secret.yaml: |\n{indent(secret(rng, i), 4)}" for i in range(SECRETS))
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {PROFILE}-manifests\n  namespace: {NAMESPACE}\n"
            f"  annotations: {{{TEMPLATE_ANNOTATION}: \"ok\"}}\ndata:\n{body}")


def cluster(i, recipient):
    # Without a recipient the publisher refuses Secrets unless the cluster allows them in clear.
    note = (f"  annotations: {{{RECIPIENT_ANNOTATION}: {recipient}}}\n" if recipient
            else "  annotations: {airlock.dev/plaintext-secrets: allow}\n")
    return f"""apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata:
  name: c{i:05d}
  namespace: {NAMESPACE}
  labels: {{bench: secrets}}
{note}spec:
  pullMode: true
"""


def profile():
    return f"""apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: {PROFILE}
spec:
  clusterSelector: {{matchLabels: {{bench: secrets}}}}
  syncMode: Continuous
  policyRefs:
  - {{kind: ConfigMap, namespace: {NAMESPACE}, name: {PROFILE}-manifests}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (files are replaced)")
    ap.add_argument("--clusters", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--recipient", help="age recipient (age1...) every cluster is annotated with")
    args = ap.parse_args()
    if args.recipient and not args.recipient.startswith("age1"):
        ap.error("--recipient must be an age recipient (age1...)")

    docs = [cluster(i, args.recipient) for i in range(args.clusters)]
    for start in range(0, len(docs), CLUSTERS_PER_FILE):
        chunk = docs[start:start + CLUSTERS_PER_FILE]
        write(os.path.join(args.out, "clusters", f"{start // CLUSTERS_PER_FILE:03d}.yaml"), "---\n".join(chunk))
    write(os.path.join(args.out, "profiles.yaml"), profile())
    write(os.path.join(args.out, "configmaps", f"{PROFILE}.yaml"), secrets_config_map(random.Random(args.seed)))


if __name__ == "__main__":
    main()
