# shellcheck shell=bash
# What hack/kube.sh (control planes) and hack/node.sh (a control plane with a node) share:
# where the Kubernetes build lives, certificates, kubeconfigs. Source it after lib.sh; it
# starts nothing and builds nothing.

# shellcheck disable=SC2034 # read by the scripts that source this file
K8S_VERSION=1.20.2
K8S_HOME="$AIRLOCK_CACHE/kubernetes-$K8S_VERSION"
K8S_BIN="$K8S_HOME/bin"
K8S_GOPATH="$K8S_HOME/gopath"
K8S_TREE="$K8S_GOPATH/src/k8s.io/kubernetes"
export AIRLOCK_KUBECTL="$K8S_BIN/kubectl"

# missing_binaries BINARY... — prints the names not yet in $K8S_BIN.
missing_binaries() {
  local b
  for b in "$@"; do [ -x "$K8S_BIN/$b" ] || echo "$b"; done
}

# pki_ca DIR CN — a new CA in DIR (ca.key, ca.crt) and the openssl.cnf the leaves use.
# Explicit v3 extensions: rustls/webpki (kube-rs) insist on CA:TRUE + keyCertSign on the
# CA, and CA:FALSE + serverAuth + SANs on a serving leaf.
pki_ca() {
  local dir="$1" cn="$2"
  ensure_pkgs openssl
  mkdir -p "$dir"
  cat >"$dir/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
[dn]
[v3_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${ENV::PKI_SAN}
[v3_client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
  (umask 077 && PKI_SAN=none openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 \
    -config "$dir/openssl.cnf" -extensions v3_ca -subj "/CN=$cn" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null)
  chmod 644 "$dir/ca.crt"
}

# pki_leaf DIR NAME SUBJECT server|client [SAN] — NAME.key and NAME.crt signed by DIR's CA;
# SAN (e.g. "IP:127.0.0.1, DNS:localhost") only for server certificates.
pki_leaf() {
  local dir="$1" name="$2" subj="$3" kind="$4" san="${5:-none}"
  (
    umask 077
    export PKI_SAN="$san"
    openssl req -new -nodes -newkey rsa:2048 -config "$dir/openssl.cnf" -subj "$subj" \
      -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
    openssl x509 -req -sha256 -days 3650 -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
      -CAcreateserial -extfile "$dir/openssl.cnf" -extensions "v3_$kind" -out "$dir/$name.crt" 2>/dev/null
    rm -f "$dir/$name.csr"
  )
}

# pki_service_account_keys DIR — sa.key (the controller manager signs tokens) and sa.pub
# (the apiserver checks them).
pki_service_account_keys() {
  (
    umask 077
    openssl genrsa -out "$1/sa.key" 2048 2>/dev/null
    openssl rsa -in "$1/sa.key" -pubout -out "$1/sa.pub" 2>/dev/null
  )
}

# write_kubeconfig FILE CLUSTER USER SERVER CA_FILE token TOKEN
# write_kubeconfig FILE CLUSTER USER SERVER CA_FILE cert CERT_FILE KEY_FILE
write_kubeconfig() {
  local file="$1" name="$2" user_name="$3" server="$4" ca user
  ca="$(base64 -w0 <"$5")"
  case "$6" in
    token) user="    token: $7" ;;
    cert) user="    client-certificate: $7
    client-key: $8" ;;
    *) die "write_kubeconfig: unknown credential kind '$6'" ;;
  esac
  (
    umask 077
    cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $user_name
  user:
$user
contexts:
- name: $name
  context:
    cluster: $name
    user: $user_name
    namespace: default
current-context: $name
KC
  )
}

# start_etcd PID_NAME MEMBER DATA_DIR PORT PEER_PORT — a one-member etcd on 127.0.0.1 unless
# PID_NAME runs; waits until it is healthy.
start_etcd() {
  local name="$1" member="$2" data="$3" port="$4" peer="$5" p
  if ! is_running "$name"; then
    for p in "$port" "$peer"; do
      port_open "$p" && die "port $p taken by another process (ports can be moved: see $0's header)"
    done
    start_bg "$name" /usr/bin/etcd \
      --name="$member" --data-dir="$data" \
      --listen-client-urls="http://127.0.0.1:$port" --advertise-client-urls="http://127.0.0.1:$port" \
      --listen-peer-urls="http://127.0.0.1:$peer" --initial-advertise-peer-urls="http://127.0.0.1:$peer" \
      --initial-cluster="$member=http://127.0.0.1:$peer" --initial-cluster-state=new \
      --logger=zap --log-outputs=stderr \
      --auto-compaction-mode=periodic --auto-compaction-retention=10m
  fi
  wait_for_url "http://127.0.0.1:$port/health" 60 || die "$name not healthy; see $(log_file "$name")"
}

# start_apiserver PID_NAME STATE_DIR ETCD_PORT ADDRESS PORT SERVICE_RANGE [FLAG...] — a
# kube-apiserver with the certificates and tokens in STATE_DIR/pki (ca, apiserver, sa,
# tokens.csv, admin.token) unless PID_NAME runs; waits until /readyz answers the admin.
start_apiserver() {
  local name="$1" dir="$2" etcd="$3" addr="$4" port="$5" range="$6" i
  shift 6
  local pki="$dir/pki"
  if ! is_running "$name"; then
    port_open "$port" "$addr" && die "$addr:$port taken by another process (ports can be moved: see $0's header)"
    start_bg "$name" "$K8S_BIN/kube-apiserver" \
      --etcd-servers="http://127.0.0.1:$etcd" \
      --bind-address="$addr" --advertise-address="$addr" \
      --secure-port="$port" --insecure-port=0 --cert-dir="$dir/apiserver-certs" \
      --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
      --client-ca-file="$pki/ca.crt" --token-auth-file="$pki/tokens.csv" \
      --service-account-issuer=https://kubernetes.default.svc.cluster.local \
      --service-account-signing-key-file="$pki/sa.key" --service-account-key-file="$pki/sa.pub" \
      --service-cluster-ip-range="$range" --allow-privileged=true \
      --endpoint-reconciler-type=none --profiling=false "$@"
  fi
  for ((i = 0; i < 240; i++)); do
    curl -fsS --max-time 3 --cacert "$pki/ca.crt" -H "Authorization: Bearer $(cat "$pki/admin.token")" \
      "https://$addr:$port/readyz" >/dev/null 2>&1 && return 0
    exited "$name" && die "$name exited; see $(log_file "$name")"
    sleep 0.5
  done
  die "$name not ready after 120s; see $(log_file "$name")"
}
