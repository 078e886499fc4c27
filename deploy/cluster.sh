#!/usr/bin/env bash
# N splash replicas on one machine behind HAProxy (deploy/haproxy.cfg).
#
#   cluster.sh up N [options]   start N replicas, each pinned to its share of
#                               the CPUs (taskset, --threads) and of the
#                               available memory (--max-memory), then HAProxy
#   cluster.sh status           each process, its /ready answer, HAProxy's port
#   cluster.sh down             stop everything this cluster started, by PID:
#                               replicas first (SIGTERM: they drain), then
#                               HAProxy
# Options of `up`:
#   --model FILE         GGUF model (default: splash's built-in model)
#   --port P             HAProxy's port (default 8000); replicas take free ports
#   --balance MODE       affinity (default: session-key hashing, least
#                        connections without a key), roundrobin (the
#                        baseline the benchmark compares against) or random
#                        (each request by a hash of its x-request-id, round-
#                        robin without one: conversations scatter as under
#                        round-robin, but a request lands alike whatever
#                        else is in flight, so splash bench can judge it)
#   --drain-timeout S    passed to each replica (default 30)
#   -- ARGS...           further `splash serve` options for every replica
# Environment: SPLASH (the binary; default `splash` on PATH, else this
# checkout's build/splash), SPLASH_CLUSTER_DIR (state: PID files, logs, the
# HAProxy config; default /tmp/splash-cluster-$UID), HAPROXY (the binary).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${SPLASH_CLUSTER_DIR:-/tmp/splash-cluster-$(id -u)}
readonly MAX_REPLICAS=64
readonly READY_WAIT_S=120 # a replica loading a large model
readonly MEM_SHARE_PCT=80 # of MemAvailable, split between the replicas

die() { echo "cluster.sh: $*" >&2; exit 1; }

find_splash() {
    if [ -n "${SPLASH:-}" ]; then echo "$SPLASH"
    elif command -v splash >/dev/null; then command -v splash
    elif [ -x "$here/../build/splash" ]; then echo "$here/../build/splash"
    else die "no splash binary (set SPLASH=/path/to/splash)"; fi
}

find_haproxy() {
    if [ -n "${HAPROXY:-}" ]; then echo "$HAPROXY"
    elif command -v haproxy >/dev/null; then command -v haproxy
    elif [ -x /usr/sbin/haproxy ]; then echo /usr/sbin/haproxy
    else die "haproxy not found (scripts/setup.sh installs it)"; fi
}

# The CPUs this process may run on, one per line ("0-3,6" expanded).
allowed_cpus() {
    local list
    list=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
    local IFS=,
    for part in $list; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}

# True when PID is alive and runs the program named NAME (a PID file can
# outlive its process, and the number can be reused by another).
pid_is() {
    local pid=$1 name=$2
    [ -r "/proc/$pid/cmdline" ] || return 1
    grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && return 1 # ended, not yet reaped
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$name"
}

# Sends SIG to the process in PIDFILE and waits up to WAIT_S for it to end;
# SIGKILL after that. Removes the PID file.
stop_pid() {
    local pidfile=$1 name=$2 sig=$3 wait_s=$4 pid
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    if pid_is "$pid" "$name"; then
        kill "-$sig" "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < wait_s * 10; i++)); do
            pid_is "$pid" "$name" || break
            sleep 0.1
        done
        if pid_is "$pid" "$name"; then
            echo "cluster.sh: $name (pid $pid) still running after ${wait_s} s: SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        # an ending process loses its command line before it has ended (a
        # large address space takes a while to unmap): wait until it has
        for ((i = 0; i < wait_s * 10; i++)); do
            [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$pidfile"
}

# Starts replica I of N: CPUs, threads and memory are its share. Prints
# "NAME PORT" once it is ready.
start_replica() {
    local i=$1 n=$2 splash=$3 mem=$4 model=$5 drain=$6
    shift 6
    local -a cpus
    mapfile -t cpus < <(allowed_cpus)
    local ncpu=${#cpus[@]} per first list
    per=$((ncpu / n))
    ((per >= 1)) || per=1
    first=$(((i - 1) * per % ncpu))
    list=$(printf '%s,' "${cpus[@]:first:per}")
    list=${list%,}
    local name="r$i" log="$dir/r$i.log"
    local -a margs=()
    [ -n "$model" ] && margs=(--model "$model")
    taskset -c "$list" "$splash" serve "${margs[@]}" --host 127.0.0.1 --port 0 --threads "$per" \
        --max-memory "$mem" --replica-id "$name" --drain-timeout "$drain" "$@" >"$log" 2>&1 </dev/null &
    echo $! >"$dir/$name.pid"
    local pid=$! port="" t
    for ((t = 0; t < READY_WAIT_S * 10; t++)); do
        [ -f "$log" ] && port=$(sed -n 's/^splash serve: ready at http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log")
        [ -n "$port" ] && break
        # (kill -0: until exec the PID runs this shell or taskset, not splash)
        kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || {
            cat "$log" >&2
            echo "cluster.sh: replica $name exited" >&2
            return 1
        }
        sleep 0.1
    done
    [ -n "$port" ] || { echo "cluster.sh: replica $name not ready after ${READY_WAIT_S} s (see $log)" >&2; return 1; }
    echo "$port" >"$dir/$name.port"
    echo "cluster.sh: $name on 127.0.0.1:$port (cpus $list, --threads $per, --max-memory $mem)" >&2
}

# deploy/haproxy.cfg with this cluster's port and servers (and the balance
# mode): the template's r1 line in each backend becomes N lines, r2 goes.
write_haproxy_cfg() {
    local n=$1 port=$2 balance=$3 servers="" i
    for ((i = 1; i <= n; i++)); do servers+="r$i:$(cat "$dir/r$i.port") "; done
    awk -v port="$port" -v servers="$servers" -v balance="$balance" '
        /^[[:space:]]*bind 127\.0\.0\.1:8000$/ { sub(/8000/, port) }
        balance != "affinity" && /^[[:space:]]*use_backend affinity/ { next }
        balance == "roundrobin" && /^[[:space:]]*balance leastconn/ { sub(/leastconn/, "roundrobin") }
        balance == "random" && /^[[:space:]]*balance leastconn/ {
            sub(/leastconn/, "hdr(x-request-id)"); print; sub(/balance.*/, "hash-type map-based sdbm avalanche")
        }
        /^[[:space:]]*server r2 / { next }
        /^[[:space:]]*server r1 / {
            n = split(servers, s, " ")
            for (i = 1; i <= n; i++) {
                split(s[i], kv, ":")
                line = $0
                gsub(/r1/, kv[1], line)
                sub(/127\.0\.0\.1:8101/, "127.0.0.1:" kv[2], line)
                print line
            }
            next
        }
        { print }' "$here/haproxy.cfg" >"$dir/haproxy.cfg"
}

cmd_up() {
    local n=${1:-}
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= MAX_REPLICAS)) || die "up needs a replica count in [1, $MAX_REPLICAS]"
    shift
    local model="" port=8000 balance=affinity drain=30
    while [ $# -gt 0 ]; do
        case $1 in
            --model) model=${2:?--model needs a file}; shift 2 ;;
            --port) port=${2:?--port needs a number}; shift 2 ;;
            --balance) balance=${2:?--balance needs affinity, roundrobin or random}; shift 2 ;;
            --drain-timeout) drain=${2:?--drain-timeout needs seconds}; shift 2 ;;
            --) shift; break ;;
            *) die "unknown option '$1' (see the head of $0)" ;;
        esac
    done
    [[ $port =~ ^[0-9]+$ ]] && ((port >= 1 && port <= 65535)) || die "--port: '$port' is not a port"
    [[ $balance =~ ^(affinity|roundrobin|random)$ ]] || die "--balance must be affinity, roundrobin or random"
    [[ $drain =~ ^[0-9]+$ ]] || die "--drain-timeout: '$drain' is not a number of seconds"
    mkdir -p "$dir"
    ls "$dir"/*.pid >/dev/null 2>&1 && die "a cluster is already up in $dir (cluster.sh down first)"
    local splash haproxy avail_kb mem
    splash=$(find_splash)
    haproxy=$(find_haproxy)
    avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    mem="$((avail_kb * MEM_SHARE_PCT / 100 / n / 1024))M"
    echo "$drain" >"$dir/drain"
    local i
    for ((i = 1; i <= n; i++)); do
        start_replica "$i" "$n" "$splash" "$mem" "$model" "$drain" "$@" || { cmd_down; die "not started"; }
    done
    write_haproxy_cfg "$n" "$port" "$balance"
    "$haproxy" -c -q -f "$dir/haproxy.cfg" || { cmd_down; die "haproxy refused $dir/haproxy.cfg"; }
    "$haproxy" -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 </dev/null &
    echo $! >"$dir/haproxy.pid"
    local t
    for ((t = 0; t < 100; t++)); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/ready" && break
        pid_is "$(cat "$dir/haproxy.pid")" haproxy || { cat "$dir/haproxy.log" >&2; cmd_down; die "haproxy exited"; }
        sleep 0.1
    done
    echo "$port" >"$dir/haproxy.port"
    echo "cluster.sh: $n replicas behind http://127.0.0.1:$port ($balance)"
}

cmd_down() {
    [ -d "$dir" ] || return 0
    local drain f
    drain=$(cat "$dir/drain" 2>/dev/null || echo 30)
    # replicas first, all at once: each drains while HAProxy still carries
    # its in-flight streams; the wait covers the drain and the final flush
    for f in "$dir"/r*.pid; do
        [ -f "$f" ] && pid_is "$(cat "$f")" splash && kill -TERM "$(cat "$f")" 2>/dev/null
    done
    for f in "$dir"/r*.pid; do
        [ -f "$f" ] && stop_pid "$f" splash TERM $((drain + 10))
    done
    stop_pid "$dir/haproxy.pid" haproxy TERM 10
    rm -f "$dir"/r*.port "$dir/haproxy.port" "$dir/drain"
}

cmd_status() {
    local f name pid port code up=0
    for f in "$dir"/r*.pid; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .pid)
        pid=$(cat "$f")
        port=$(cat "$dir/$name.port" 2>/dev/null || echo "?")
        if pid_is "$pid" splash; then
            code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready" || true)
            echo "$name pid $pid port $port ready $code"
            up=$((up + 1))
        else
            echo "$name pid $pid gone"
        fi
    done
    if [ -f "$dir/haproxy.pid" ] && pid_is "$(cat "$dir/haproxy.pid")" haproxy; then
        echo "haproxy pid $(cat "$dir/haproxy.pid") port $(cat "$dir/haproxy.port" 2>/dev/null || echo "?")"
    else
        echo "haproxy not running"
        return 1
    fi
    ((up > 0))
}

case ${1:-} in
    up) shift; cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    *) die "usage: cluster.sh up N [--model FILE] [--port P] [--balance affinity|roundrobin|random] | status | down" ;;
esac
