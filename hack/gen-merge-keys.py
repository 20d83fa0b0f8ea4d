#!/usr/bin/env python3
"""Generates publisher/src/render/patch/merge_keys.rs: where strategic merge patches merge lists.

Sveltos applies post-render patches with kustomize, and kustomize merges a list by key only
where its built-in schema says `x-kubernetes-patch-strategy: merge`; it takes the keys from
`x-kubernetes-list-map-keys`, else `x-kubernetes-patch-merge-key`, else merges the list's
scalars. That schema is the Kubernetes v1.21.2 OpenAPI document compiled into kustomize
(kyaml/openapi/kubernetesapi/v1_21_2), whatever the cluster runs, so the table is read from
that very copy: the gzip-compressed gnostic protobuf inside the kubectl binary that runs
`kubectl kustomize`. `--openapi-json` reads a `/openapi/v2` document instead (for example
`kubectl get --raw /openapi/v2` from an API server) to compare.

Only what changes a merge is kept: lists whose strategy includes `merge`, and the object
fields that lead to one. Everything else means "replace", which is also what kustomize does
where it has no schema (CRDs), so the pruned graph gives the same answers as the full one.
The table also lists the cluster-scoped kinds (kyaml's `findNamespaceability`: a kind is
namespaced when some GET path with its GVK contains `namespaces/{namespace}`), which decide a
resource's effective namespace in kustomize's selectors.

Usage: hack/gen-merge-keys.py [--kubectl PATH | --openapi-json FILE] [--out FILE]
Needs PyYAML (extension values in the protobuf are YAML snippets).
"""

import argparse
import gzip
import json
import os
import shutil
import sys
import zlib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "publisher", "src", "render", "patch", "merge_keys.rs")


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """The (field number, value) pairs of one protobuf message; bytes for length-delimited."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(b, i)
        elif wire == 1:
            value, i = b[i : i + 8], i + 8
        elif wire == 5:
            value, i = b[i : i + 4], i + 4
        elif wire == 2:
            n, i = varint(b, i)
            value, i = b[i : i + n], i + n
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, value))
    return out


def text(b):
    return b.decode("utf-8")


# Field numbers of gnostic's openapi_v2.proto.
DOC_INFO, DOC_PATHS, DOC_DEFINITIONS = 2, 8, 9
INFO_VERSION = 2
PATHS_PATH = 2
PATH_GET = 2
OP_EXTENSION = 13
S_REF, S_ADDITIONAL, S_TYPE, S_ITEMS, S_PROPERTIES, S_EXTENSION = 1, 21, 22, 23, 25, 31


def extensions(msg_fields, number):
    out = {}
    for n, v in msg_fields:
        if n == number:
            named = dict(fields(v))
            any_fields = dict(fields(named.get(2, b"")))
            out[text(named[1])] = yaml.safe_load(text(any_fields.get(2, b"")))
    return out


def schema_from_proto(b):
    f = fields(b)
    s = {}
    for n, v in f:
        if n == S_REF:
            s["$ref"] = text(v)
        elif n == S_TYPE:
            s["type"] = [text(t) for k, t in fields(v) if k == 1]
        elif n == S_ITEMS:
            items = [schema_from_proto(x) for k, x in fields(v) if k == 1]
            if items:
                s["items"] = items[0]
        elif n == S_ADDITIONAL:
            inner = dict(fields(v))
            if 1 in inner:
                s["additionalProperties"] = schema_from_proto(inner[1])
        elif n == S_PROPERTIES:
            props = {}
            for k, named in fields(v):
                nf = dict(fields(named))
                props[text(nf[1])] = schema_from_proto(nf.get(2, b""))
            s["properties"] = props
    s.update(extensions(f, S_EXTENSION))
    return s


def swagger_from_proto(b):
    doc = fields(b)
    definitions, paths, info = {}, {}, {}
    for n, v in doc:
        if n == DOC_INFO:
            info = {"version": text(dict(fields(v)).get(INFO_VERSION, b"?"))}
        elif n == DOC_DEFINITIONS:
            for _, named in fields(v):
                nf = dict(fields(named))
                definitions[text(nf[1])] = schema_from_proto(nf.get(2, b""))
        elif n == DOC_PATHS:
            for k, named in fields(v):
                if k != PATHS_PATH:
                    continue
                nf = dict(fields(named))
                item = fields(nf.get(2, b""))
                get = [x for k2, x in item if k2 == PATH_GET]
                entry = {}
                if get:
                    entry["get"] = extensions(fields(get[0]), OP_EXTENSION)
                paths[text(nf[1])] = entry
    return {"info": info, "definitions": definitions, "paths": paths}


def embedded_swagger(binary):
    """kustomize's built-in schema: the gzip stream in the binary holding an OpenAPI v2 proto."""
    data = open(binary, "rb").read()
    start = 0
    while True:
        at = data.find(b"\x1f\x8b\x08", start)
        if at < 0:
            sys.exit(f"{binary}: no embedded kustomize OpenAPI schema found")
        start = at + 1
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[at : at + 4096], 64)
        except zlib.error:
            continue
        if head.startswith(b"\n\x032.0") and b"Kubernetes" in head:
            stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return stream.decompress(data[at:])


def ref_name(ref):
    return ref.rsplit("/", 1)[-1]


def type_meta(gvk):
    group, version = gvk.get("group", ""), gvk.get("version", "")
    return ("/".join(p for p in (group, version) if p), gvk.get("kind", ""))


class Graph:
    """The pruned schema graph, as nodes numbered in the order they are written."""

    def __init__(self, definitions):
        self.definitions = definitions
        self.nodes = []  # rendered Rust expressions
        self.by_definition = {}
        self.numbers = {}

    def resolve(self, schema):
        name, seen = None, set()
        while "$ref" in schema:
            name = ref_name(schema["$ref"])
            if name in seen or name not in self.definitions:
                return None, None
            seen.add(name)
            schema = self.definitions[name]
        return schema, name

    def child(self, schema):
        """Node number for a field's or item's schema, or None when nothing below merges."""
        kind = schema.get("type")
        if kind == ["array"] or kind == "array":
            strategy = schema.get("x-kubernetes-patch-strategy") or ""
            if "merge" not in strategy.split(","):
                return None
            keys = schema.get("x-kubernetes-list-map-keys")
            if keys is None:
                key = schema.get("x-kubernetes-patch-merge-key")
                keys = [key] if key else []
            items = None
            if "items" in schema:
                items = self.object(schema["items"])
            rust_keys = ", ".join(json.dumps(k) for k in keys)
            rust_items = "None" if items is None else f"Some({items})"
            return self.add(f"Node::List(&[{rust_keys}], {rust_items})")
        return self.object(schema)

    def object(self, schema):
        resolved, name = self.resolve(schema)
        if resolved is None:
            return None
        if name is not None and name in self.by_definition:
            return self.by_definition[name]
        if name is not None:
            self.by_definition[name] = None  # breaks cycles while this one is built
        if "additionalProperties" in resolved and "properties" not in resolved:
            # kyaml would follow a map's value schema; no built-in map leads to a merged
            # list, so the Rust side has no node for one.
            if self.child(resolved["additionalProperties"]) is not None:
                sys.exit(f"{name}: a map whose values hold merged lists; teach render/patch/schema.rs and render/patch/schema_node.rs maps")
            number = None
        else:
            entries = []
            for field in sorted(resolved.get("properties", {})):
                value = self.child(resolved["properties"][field])
                if value is not None:
                    entries.append(f"({json.dumps(field)}, {value})")
            number = self.add(f"Node::Object(&[{', '.join(entries)}])") if entries else None
        if name is not None:
            self.by_definition[name] = number
        return number

    def add(self, expr):
        """Numbers a node; equal nodes share one number."""
        if expr not in self.numbers:
            self.numbers[expr] = len(self.nodes)
            self.nodes.append(expr)
        return self.numbers[expr]


def build(swagger, source):
    definitions = swagger["definitions"]
    graph = Graph(definitions)
    kinds = {}
    for name in sorted(definitions):
        for gvk in definitions[name].get("x-kubernetes-group-version-kind") or []:
            api_version, kind = type_meta(gvk)
            node = graph.object({"$ref": f"#/definitions/{name}"})
            if node is not None:
                kinds.setdefault(api_version, {}).setdefault(kind, node)
    namespaced = {}
    for path, item in swagger["paths"].items():
        get = item.get("get") or {}
        gvk = get.get("x-kubernetes-group-version-kind")
        if not gvk:
            continue
        tm = type_meta(gvk)
        if "namespaces/{namespace}" in path:
            namespaced[tm] = True
        else:
            namespaced.setdefault(tm, False)
    cluster = {}
    for (api_version, kind), is_namespaced in namespaced.items():
        if not is_namespaced:
            cluster.setdefault(api_version, []).append(kind)

    out = [
        f"// @generated by hack/gen-merge-keys.py from {source}. Do not edit.",
        "",
        "//! kustomize's built-in schema, pruned to what leads to a merged list: the graph, the root",
        "//! node of each built-in kind, and the cluster-scoped kinds. `schema` reads it.",
        "",
        "use super::schema_node::Node;",
        "",
        "/// The schema graph, pruned to what leads to a merged list.",
        "#[rustfmt::skip]",
        "pub(super) static NODES: &[Node] = &[",
    ]
    out += [f"    {expr}, // {i}" for i, expr in enumerate(graph.nodes)]
    out += [
        "];",
        "",
        "/// apiVersion → kind → root node, both sorted (`Schema::of_kind` searches them).",
        "#[rustfmt::skip]",
        "pub(super) static KINDS: &[(&str, &[(&str, u16)])] = &[",
    ]
    for api_version in sorted(kinds):
        entries = ", ".join(f"({json.dumps(k)}, {n})" for k, n in sorted(kinds[api_version].items()))
        out.append(f"    ({json.dumps(api_version)}, &[{entries}]),")
    out += [
        "];",
        "",
        "/// apiVersion → cluster-scoped kinds, both sorted (`is_cluster_scoped` searches them).",
        "#[rustfmt::skip]",
        "pub(super) static CLUSTER_SCOPED: &[(&str, &[&str])] = &[",
    ]
    for api_version in sorted(cluster):
        entries = ", ".join(json.dumps(k) for k in sorted(cluster[api_version]))
        out.append(f"    ({json.dumps(api_version)}, &[{entries}]),")
    out.append("];")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", help="kubectl binary holding kustomize (default: kubectl on PATH)")
    parser.add_argument("--openapi-json", help="read an /openapi/v2 JSON document instead")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.openapi_json:
        opener = gzip.open if args.openapi_json.endswith(".gz") else open
        with opener(args.openapi_json, "rt") as f:
            swagger = json.load(f)
        info = swagger.get("info", {})
        source = f"{os.path.basename(args.openapi_json)} ({info.get('title')} {info.get('version')})"
    else:
        binary = args.kubectl or shutil.which("kubectl")
        if not binary:
            sys.exit("kubectl not found; pass --kubectl or --openapi-json")
        binary = os.path.realpath(binary)
        swagger = swagger_from_proto(embedded_swagger(binary))
        version = swagger["info"]["version"]
        source = f"kustomize's built-in Kubernetes {version} OpenAPI schema (in kubectl)"
    with open(args.out, "w") as f:
        f.write(build(swagger, source))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
