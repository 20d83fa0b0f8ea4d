# shellcheck shell=bash
# hack/node.sh's processes on the host: containerd and the kubelet in a private mount
# namespace under strace, finding and stopping them and what they start, and undoing what
# the kubelet changes on the host (sysctls, cgroups). Sourced by node.sh after it sets the
# paths; it has no entry point of its own.

# Runs as the first process of the private mount namespace: the paths containerd and the
# kubelet hard-code (/run/containerd/s, /var/log/pods, /var/lib/kubelet/device-plugins)
# land in $HOST_DIR, and every mount made in here dies with the namespace.
ns_init() {
  local d
  for d in run var/log var/lib; do
    mkdir -p "$HOST_DIR/$d"
    # -n: libmount would otherwise keep its utab in the host's /run/mount.
    mount -n --bind "$HOST_DIR/$d" "/$d"
  done
  traced "$@"
}

# traced NAME CMD... — exec CMD under strace, every connect of it and of its children to
# $TRACE_DIR/NAME.trace. The seccomp filter stops the tracee for connect only.
traced() {
  local name="$1"
  shift
  exec strace -f --seccomp-bpf -qq -e trace=connect -e signal=none -o "$TRACE_DIR/$name.trace" -- "$@"
}

# service_pid NAME — the process strace runs for NAME (pid files name strace, once the
# namespace is set up).
service_pid() {
  local pid child
  is_running "$P-$1" || return 1
  pid="$(cat "$(pid_file "$P-$1")")"
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = strace ] || return 1
  child="$(pgrep -P "$pid" | head -n 1)"
  [ -n "$child" ] && echo "$child"
}

# wait_service NAME — until strace runs NAME's process.
wait_service() {
  local i
  for ((i = 0; i < 100; i++)); do
    service_pid "$1" >/dev/null && return 0
    is_running "$P-$1" || break
    sleep 0.1
  done
  log "$1 did not start: $(service_state "$1")"
  tail -n 5 "$(log_file "$P-$1")" | sed "s/^/[$(basename "$0")]   $1 log: /" >&2
  die "$1 did not start; see $(log_file "$P-$1")"
}

# service_state NAME — what wait_service saw, for the error that says why it gave up.
service_state() {
  local pf pid
  pf="$(pid_file "$P-$1")"
  [ -s "$pf" ] || { echo "no pid file $pf"; return; }
  pid="$(cat "$pf")"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "pid $pid exited"
  elif ! grep -qzxF "AIRLOCK_SERVICE_NAME=$P-$1" "/proc/$pid/environ" 2>/dev/null; then
    echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) lacks AIRLOCK_SERVICE_NAME=$P-$1 in /proc/$pid/environ"
  else
    echo "pid $pid runs $(cat "/proc/$pid/comm" 2>/dev/null) with children [$(pgrep -P "$pid" | tr '\n' ' ')]"
  fi
}

# start_in_namespace NAME CMD... — CMD in the namespace of whichever of containerd and the
# kubelet runs (the kubelet's volume mounts must be where containerd looks), else a new one.
start_in_namespace() {
  local name="$1" other pid
  shift
  for other in containerd kubelet; do
    pid="$(service_pid "$other")" || continue
    start_bg "$P-$name" nsenter --mount="/proc/$pid/ns/mnt" -- "$HACK_DIR/node.sh" __traced "$name" "$@"
    wait_service "$name"
    return 0
  done
  start_bg "$P-$name" unshare --mount --propagation private -- "$HACK_DIR/node.sh" __ns-init "$name" "$@"
  wait_service "$name"
  readlink "/proc/$(service_pid "$name")/ns/mnt" >"$DIR/mntns"
}

# kubepods_pids — every process in the kubelet's cgroups.
kubepods_pids() {
  local d
  for d in /sys/fs/cgroup/*/kubepods; do
    # A cgroup may vanish while it is read.
    [ -d "$d" ] && { find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null || true; }
  done
  return 0
}

# node_pids — processes left by containerd and the kubelet: in our mount namespace with
# our service tag (shims), or in the kubelet's cgroups (containers).
node_pids() {
  local ns p
  ns="$(cat "$DIR/mntns" 2>/dev/null)" || ns=""
  if [ -n "$ns" ]; then
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
      grep -qzE "^AIRLOCK_SERVICE_NAME=$P-(containerd|kubelet)\$" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
    done
  fi
  kubepods_pids
}

# stop_traced NAME — TERM the service (its strace exits once all its tracees have).
stop_traced() {
  local name="$1" pid i
  if pid="$(service_pid "$name")"; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    log "$P-$name stopped (pid $pid)"
  fi
}

kill_node_pids() {
  local pids i
  for ((i = 0; i < 50; i++)); do
    mapfile -t pids < <(node_pids | sort -u)
    [ "${#pids[@]}" -eq 0 ] && return 0
    kill -9 "${pids[@]}" 2>/dev/null || true
    sleep 0.2
  done
  log "warning: node processes still alive: ${pids[*]}"
}

# ---------------------------------------------------------------------------
# host state the kubelet changes
# ---------------------------------------------------------------------------

sysctl_path() { echo "/proc/sys/${1//.//}"; }

# Saved once, before the first kubelet start, so a crash never saves the kubelet's values.
save_sysctls() {
  [ -f "$DIR/sysctl.saved" ] && return 0
  local s
  for s in "${SYSCTLS[@]}"; do echo "$s $(cat "$(sysctl_path "$s")")"; done >"$DIR/sysctl.saved.tmp"
  mv "$DIR/sysctl.saved.tmp" "$DIR/sysctl.saved"
}

restore_sysctls() {
  [ -f "$DIR/sysctl.saved" ] || return 0
  local s v
  while read -r s v; do echo "$v" >"$(sysctl_path "$s")"; done <"$DIR/sysctl.saved"
  rm -f "$DIR/sysctl.saved"
}

remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods; do
    # Deepest first; one still in use stays, and is reported below.
    [ -d "$d" ] && { find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
  done
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && log "warning: $d could not be removed"
  done
  return 0
}

# Before a start without containerd: the kubelet cannot work without it, and what both
# left (pods, shims, the strace still following them) belongs to no running node. That is
# ours to remove; another kubelet's cgroups are not.
clean_leftovers() {
  service_pid containerd >/dev/null && return 0
  stop_traced kubelet
  if pgrep -x kubelet >/dev/null; then die "another kubelet runs on this machine (pid $(pgrep -x kubelet | head -n1))"; fi
  if [ -n "$(kubepods_pids)" ] && [ ! -f "$DIR/mntns" ]; then
    die "/sys/fs/cgroup/*/kubepods holds processes this script did not start"
  fi
  kill_node_pids
  stop_pid "$P-kubelet"
  stop_pid "$P-containerd"
  rm -f "$DIR/mntns"
  rm -rf "$HOST_DIR/run" "$DIR/containerd/state"
  remove_cgroups
  restore_sysctls
}
