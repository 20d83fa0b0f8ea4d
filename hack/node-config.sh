# shellcheck shell=bash
# hack/node.sh's certificates and configuration files: the PKI of its control plane and
# kubelet, kubeconfigs, containerd's and the kubelet's configuration, CNI, registry hosts.
# Sourced by node.sh after it sets the addresses and paths; writes files, starts nothing.

gen_pki() {
  [ -f "$PKI/.done" ] && return 0
  rm -rf "$PKI"
  pki_ca "$PKI" airlock-test-node-ca
  pki_leaf "$PKI" apiserver "/CN=kube-apiserver" server \
    "IP:$API_ADDR, IP:127.0.0.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"
  # The Node authorizer and NodeRestriction know a kubelet by this name and group.
  pki_leaf "$PKI" kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" client
  pki_leaf "$PKI" kubelet-serving "/CN=$NODE_NAME" server "IP:$NODE_NAME"
  # The apiserver's identity towards the kubelet (logs, exec).
  pki_leaf "$PKI" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  pki_service_account_keys "$PKI"
  (
    umask 077
    local user
    for user in admin kcm scheduler; do openssl rand -hex 16 >"$PKI/$user.token"; done
    {
      echo "$(cat "$PKI/admin.token"),airlock-admin,airlock-admin,\"system:masters\""
      echo "$(cat "$PKI/kcm.token"),system:kube-controller-manager,kcm,\"system:masters\""
      # The bootstrap RBAC policy binds this user to what a scheduler needs.
      echo "$(cat "$PKI/scheduler.token"),system:kube-scheduler,scheduler"
    } >"$PKI/tokens.csv"
  )
  touch "$PKI/.done"
}

write_configs() {
  local server="https://$API_ADDR:$API_PORT" d name
  write_kubeconfig "$KUBECONFIG_FILE" airlock-node airlock-node-admin "$server" "$PKI/ca.crt" token "$(cat "$PKI/admin.token")"
  write_kubeconfig "$DIR/controller-manager.kubeconfig" airlock-node kcm "$server" "$PKI/ca.crt" token "$(cat "$PKI/kcm.token")"
  write_kubeconfig "$DIR/scheduler.kubeconfig" airlock-node scheduler "$server" "$PKI/ca.crt" token "$(cat "$PKI/scheduler.token")"
  write_kubeconfig "$DIR/kubelet.kubeconfig" airlock-node "system:node:$NODE_NAME" "$server" "$PKI/ca.crt" \
    cert "$PKI/kubelet-client.crt" "$PKI/kubelet-client.key"
  for d in containerd/root containerd/opt cni kubelet trace; do mkdir -p "$DIR/$d"; done
  echo "nameserver 127.0.0.1" >"$DIR/resolv.conf"
  # Pods get sandboxes, but hostNetwork ones never reach CNI: the plugin is only there
  # because the runtime reports the node's network ready once a configuration loads.
  cat >"$DIR/cni/10-loopback.conflist" <<'JSON'
{"cniVersion": "0.4.0", "name": "airlock-loopback", "plugins": [{"type": "loopback"}]}
JSON
  # The local registry over plain HTTP, under both its names (`register`'s default image
  # is localhost:5000/...), and in place of every other registry (`_default`, which
  # containerd takes for a host without a directory of its own): an image named for
  # docker.io or quay.io, as a bundle's Deployment may name it, is then looked for in the
  # local registry and not found, instead of being fetched from the internet.
  for name in "$REGISTRY" "localhost:${REGISTRY#*:}" _default; do
    mkdir -p "$DIR/containerd/certs.d/$name"
    cat >"$DIR/containerd/certs.d/$name/hosts.toml" <<TOML
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
TOML
  done
  cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
# Snapshotters this machine cannot use; they would only log errors.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # The VM gives no CAP_SYS_RESOURCE: lowering a score fails, and with it every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/bin/runc"
        # cgroup v1 without systemd: the kubelet uses cgroupfs too.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/containerd/certs.d"
TOML
  cat >"$DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failSwapOn: false
resolvConf: $DIR/resolv.conf
clusterDomain: cluster.local
# It would add chains to the host's iptables.
makeIPTablesUtilChains: false
serializeImagePulls: false
# A fresh node reports Ready on its first status update after the runtime is up: sooner
# than the default 10s. Unchanged status is still posted only once a minute.
nodeStatusUpdateFrequency: 1s
nodeStatusReportFrequency: 1m
# The defaults (10 % of the disk free, 15 % for images) taint a node on a shared machine's
# fuller disk with disk-pressure, and no pod is scheduled: absolute floors instead.
evictionHard:
  nodefs.available: 1Gi
  imagefs.available: 1Gi
  memory.available: 100Mi
# Image garbage collection starts at 85 % of the disk used, which a shared machine's disk
# passes, and then deletes the images hack/node-images.sh loaded, which no registry can give
# back: pods that need them never start. The eviction floors above guard the disk instead.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML
}
