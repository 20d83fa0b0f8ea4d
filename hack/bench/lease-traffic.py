#!/usr/bin/env python3
"""What a publisher replica of `watch --scale-out` costs the management apiserver: the
wall time and apiserver CPU of one Lease renewal (a PUT on the resourceVersion last
written) and of one membership list (a LIST of the group's Leases by label), measured
with N sequential requests each against a live apiserver.

Usage: lease-traffic.py KUBECONFIG APISERVER_PID [N] [MEMBERS]
The kubeconfig must carry a bearer token (hack/services.sh's do). Writes in a namespace
of its own, removed at the end.
"""
import json
import os
import ssl
import sys
import time
import urllib.request

def kubeconfig(path):
    server = token = None
    for line in open(path):
        line = line.strip()
        if line.startswith("server:"):
            server = line.split(None, 1)[1]
        if line.startswith("token:"):
            token = line.split(None, 1)[1]
    return server, token

def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def main():
    path, pid = sys.argv[1], int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    members = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    server, token = kubeconfig(path)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def call(method, url, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(server + url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, context=context) as answer:
            return json.loads(answer.read())

    ns = f"lease-traffic-{os.getpid()}"
    call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    base = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    try:
        leases = []
        for i in range(members):
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": f"member-{i}", "labels": {"airlock.dev/publisher-group": "bench"},
                                  "annotations": {"airlock.dev/publisher-view": "0" * 24}},
                     "spec": {"holderIdentity": f"replica-{i}", "leaseDurationSeconds": 30,
                              "renewTime": "2030-01-01T00:00:00.000000Z"}}
            leases.append(call("POST", base, lease))
        lease = leases[0]
        cpu, start = cpu_seconds(pid), time.monotonic()
        for _ in range(n):
            lease["spec"]["renewTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            lease = call("PUT", f"{base}/member-0", lease)
        renew_wall, renew_cpu = (time.monotonic() - start) / n, (cpu_seconds(pid) - cpu) / n
        cpu, start = cpu_seconds(pid), time.monotonic()
        for _ in range(n):
            call("GET", base + "?labelSelector=airlock.dev%2Fpublisher-group%3Dbench")
        list_wall, list_cpu = (time.monotonic() - start) / n, (cpu_seconds(pid) - cpu) / n
        print(f"renew: {n} PUTs, {renew_wall * 1000:.2f} ms wall and {renew_cpu * 1000:.2f} ms apiserver CPU each")
        print(f"list of {members} member Leases: {n} LISTs, {list_wall * 1000:.2f} ms wall and {list_cpu * 1000:.2f} ms apiserver CPU each")
    finally:
        call("DELETE", f"/api/v1/namespaces/{ns}")

if __name__ == "__main__":
    main()
