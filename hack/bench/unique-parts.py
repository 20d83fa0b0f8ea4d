#!/usr/bin/env python3
"""Writes every distinct part of an OCI layout's newest bundles as an uncompressed tar.

The cold publish benchmark's floor is `tar | gzip -6` + `sha256sum` over the
unique content a publish produced: the canonical tar of each distinct part, which is what
the publisher itself compresses and hashes. This reads the layout the publisher wrote,
follows each cluster's `:latest` manifest to its part layers, and writes each distinct
part, decompressed, to OUT/<part digest>.tar. It prints the count and the total bytes.

Only the Python standard library is used.

Usage: unique-parts.py LAYOUT OUT
"""

import gzip
import json
import os
import sys

PART_MEDIA_TYPE = "application/vnd.airlock.part.v1.tar+gzip"


def blob(layout, digest):
    with open(os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1]), "rb") as f:
        return f.read()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    layout, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(layout, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    seen, total = set(), 0
    for entry in index["manifests"]:
        if not entry.get("annotations", {}).get("org.opencontainers.image.ref.name", "").endswith(":latest"):
            continue
        manifest = json.loads(blob(layout, entry["digest"]))
        for layer in manifest["layers"]:
            part = layer.get("annotations", {}).get("dev.airlock.part.digest")
            if layer["mediaType"] != PART_MEDIA_TYPE or part in seen:
                continue
            seen.add(part)
            tar = gzip.decompress(blob(layout, layer["digest"]))
            total += len(tar)
            with open(os.path.join(out, part.split(":", 1)[1] + ".tar"), "wb") as f:
                f.write(tar)
    print(len(seen), total)


if __name__ == "__main__":
    main()
