#!/usr/bin/env python3
"""Turns the benchmark results (results.tsv written by hack/bench/*.sh) into the table
hack/bench.sh prints and the BENCHMARKS.md it writes.

Each row of the table is computed here from the samples: median and min-max, the ratio to
the peer measured in the same run, the target and whether it was met. A row whose
figures are missing is an error, never invented: every script ran. For a missed
target the document shows where the time went (client CPU, server CPU, requests, the
CPU profile the script recorded) and what would close it. Judging happens only here, so
the scripts stay free of thresholds and a slow machine never fails the benchmark.

Only the Python standard library is used.

Usage: report.py --results FILE --out FILE [--machine FILE] [--publisher FILE] [--confidential FILE]
                 [--profiles DIR] [--criterion DIR] [--quick]
"""

import argparse
import json
import os
import statistics

from bench_rows import MISS_NOTES, rows, seconds, size

# The rows hack/bench/{puller,mirror,verify,reports}.sh measure; publisher.sh reports 5-7
# itself.
EXPECTED_ROWS = ("1", "2", "3", "4", "8", "9", "10", "11", "12")


class Results:
    """The samples of results.tsv: numbers per key, or a text."""

    def __init__(self, path):
        self.values, self.texts, self.units = {}, {}, {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, unit, rest = line.rstrip("\n").split("\t", 2)
                if unit == "text":
                    self.texts[key] = rest
                else:
                    self.values[key] = [float(v) for v in rest.split()]
                    self.units[key] = unit

    def has(self, *keys):
        return all(k in self.values for k in keys)

    def median(self, key):
        return statistics.median(self.values[key])

    def spread(self, key):
        return min(self.values[key]), max(self.values[key])

    def text(self, key, default=""):
        return self.texts.get(key, default)


def show(results, key):
    """`median (min–max)` in the key's unit; one value alone when all samples agree."""
    unit = results.units[key]
    fmt = seconds if unit == "s" else (lambda v: size(v, unit))
    lo, hi = results.spread(key)
    med = fmt(results.median(key))
    return med if fmt(lo) == fmt(hi) else f"{med} ({fmt(lo)}–{fmt(hi)})"


def markdown_table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def text_table(header, lines):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*map(str, line)) for line in [header, *lines])


def read(path):
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    return None


def machine_section(path):
    facts = read(path)
    return ["## Machine", "", "```", facts or "(not recorded)", "```", ""]


def details_section(results):
    out = ["## Every figure", "",
           "Median (min–max) of the runs. *client CPU* is the user+system time of the measured "
           "command and its children; *server CPU* the time the kube-apiserver and etcd (rows 1–4) "
           "or the registry (rows 8–9, 11) spent meanwhile.", ""]
    lines = []
    for key in sorted(results.values):
        lines.append((f"`{key}`", show(results, key)))
    out += [markdown_table(("figure", "value"), lines), ""]
    requests = sorted(k for k in results.texts if k.endswith(".requests"))
    if requests:
        out += ["### API requests, as each client logged them", ""]
        out += [f"- `{k}`: {results.text(k)}" for k in requests]
        out.append("")
    return out


def commands_section(results):
    out = ["## The exact commands", "",
           "`hack/bench.sh` runs everything: it builds the release binaries, starts the services "
           "with `hack/services.sh start`, generates the data with a fixed seed "
           "(`hack/bench/gen-objects.py`, `hack/bench/gen-fleet.py`) and runs "
           "`hack/bench/puller.sh`, `hack/bench/mirror.sh`, `hack/bench/verify.sh`, "
           "`hack/bench/publisher.sh` and `hack/bench/reports.sh`. Paths are relative to the repository; `kubectl` is "
           "`$AIRLOCK_KUBECTL --kubeconfig $AIRLOCK_KUBECONFIG_MANAGED` (kubectl 1.20.2).", ""]
    for key in sorted(k for k in results.texts if k.endswith(".cmd")):
        out += [f"- `{key[:-4]}`:", "", f"  ```sh\n  {results.text(key)}\n  ```", ""]
    return out


def duration(ns):
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def micro_section(path):
    """The criterion estimates hack/bench/micro.sh left, one line per benchmark."""
    lines = []
    for root, _, files in os.walk(path):
        if os.path.basename(root) != "new" or not {"estimates.json", "benchmark.json"} <= set(files):
            continue
        with open(os.path.join(root, "benchmark.json"), encoding="utf-8") as f:
            bench = json.load(f)
        with open(os.path.join(root, "estimates.json"), encoding="utf-8") as f:
            median = json.load(f)["median"]
        ns, ci = median["point_estimate"], median["confidence_interval"]
        per_second = 1e9 / ns
        throughput = bench.get("throughput") or {}
        if "Bytes" in throughput:
            rate = f"{throughput['Bytes'] * per_second / 1e6:,.0f} MB/s"
        elif "Elements" in throughput:
            rate = f"{throughput['Elements'] * per_second:,.0f} elements/s"
        else:
            rate = f"{per_second:,.0f} per second"
        lines.append((f"`{bench['full_id']}`", duration(ns),
                      f"{duration(ci['lower_bound'])}–{duration(ci['upper_bound'])}", rate))
    if not lines:
        raise SystemExit(f"report.py: no criterion estimates under {path}")
    return ["## Micro-benchmarks (criterion)", "",
            "Library functions alone, on deterministic data made in the benchmark's code "
            "(`bundle/benches/contract.rs`, `publisher/benches/selection.rs`; commands below, "
            "`micro.*`). The median of criterion's samples, the 95 % confidence interval of "
            "that median, and the throughput at the median. The `10MB` group's files are random "
            "letters (they compress less than 2:1), the `10MB-yaml` group's are YAML of a small "
            "vocabulary (about 6:1, like row 10's bundle); `selection` counts clusters as its elements.", "",
            markdown_table(("benchmark", "median", "95 % interval", "throughput"), sorted(lines)), ""]


def misses_section(results, computed, profiles):
    missed = [r for r in computed if r["met"] == "no"]
    out = ["## Missed targets: where the time goes, and what would close it", ""]
    if not missed:
        return out + ["Every target with figures in this run was met.", ""]
    explained = set()
    for r in missed:
        out += [f"### Row {r['row']}: {r['what']} — {r['ratio']}, target {r['target']}", ""]
        note = MISS_NOTES.get(r["key"])
        if note and r["key"] in explained:
            out += ["The same cause as above.", ""]
        elif note:
            out += [note(results).strip(), ""]
            explained.add(r["key"])
        profile = read(os.path.join(profiles, f"{r['profile']}.txt")) if r.get("profile") and profiles else None
        if profile:
            out += ["CPU profile of our command (perf, self time per function):", "", "```", profile, "```", ""]
    return out


def fragment_section(title, script, fragment):
    """A script's own Markdown fragment as a section, its headings two levels down, under
    this document's own."""
    if not fragment:
        return []
    demoted = "\n".join("##" + line if line.startswith("#") else line for line in fragment.splitlines())
    return [f"## {title}", "", f"As written by `{script}` in this run:", "", demoted, ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--machine")
    ap.add_argument("--publisher")
    ap.add_argument("--confidential")
    ap.add_argument("--profiles")
    ap.add_argument("--criterion")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()

    results = Results(args.results)
    computed = rows(results, show)
    # hack/bench.sh ran every script, so a missing row is a harness that rotted.
    missing = sorted(set(EXPECTED_ROWS) - {r["row"] for r in computed}, key=int)
    if missing:
        raise SystemExit(f"report.py: no figures for row(s) {', '.join(missing)} in {args.results}")
    header = ("#", "measurement", "ours", "peer (same run)", "ratio", "target", "met?")
    table = [(r["row"], r["what"], r["ours"], r["peer"], r["ratio"], r["target"], r["met"]) for r in computed]
    print(text_table(header, table))

    mode = "quick (CI sizes, 1 run, dev build: figures only show the harness works)" if args.quick else "full"
    doc = ["# Benchmarks", "",
           f"Issue 6: each Airlock tool against what an operator would script instead, in the same run, "
           f"on the same data and the same real services. Mode: **{mode}**. Ours and peer are medians, "
           f"with the min–max of the runs in parentheses. Regenerate with `hack/bench.sh` "
           f"(`--quick` for the CI sizes).", ""]
    doc += [markdown_table(header, table), ""]
    publisher, confidential = read(args.publisher), read(args.confidential)
    if publisher:
        doc += ["Rows 5–7 (the publisher) are in [their own section](#publisher-rows-57).", ""]
    if confidential:
        doc += ["Row 13 (confidential bundles) is in [its own section](#confidential-bundles-row-13).", ""]
    doc += machine_section(args.machine)
    doc += misses_section(results, computed, args.profiles)
    doc += fragment_section("Publisher (rows 5–7)", "hack/bench/publisher.sh", publisher)
    doc += fragment_section("Confidential bundles (row 13)", "hack/bench/confidential.sh", confidential)
    if args.criterion:
        doc += micro_section(args.criterion)
    doc += details_section(results)
    doc += commands_section(results)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(doc).rstrip() + "\n")


if __name__ == "__main__":
    main()
