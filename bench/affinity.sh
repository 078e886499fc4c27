#!/usr/bin/env bash
# Replicas behind HAProxy (deploy/), measured with splash bench's sessions
# workload through the balancer (URL arms, the same servers throughout):
#   affinity  A = 2 replicas behind round-robin, B = 2 replicas behind the
#             session-key affinity config (each cluster: one core per replica);
#             --baseline random makes A scatter each turn by a hash of its
#             x-request-id instead (cluster.sh --balance random): no affinity
#             either, but each turn lands alike in every slot, where
#             round-robin's landing follows the chance order of concurrent
#             arrivals, which alone moved its slots by 9-22 %
#   split     A = 1 replica with every core's threads, B = 2 replicas with a
#             core each, both behind the affinity config (what splitting costs)
# Each arm is its own cluster.sh cluster (own replicas, own HAProxy); only the
# arm being measured is busy. Prints bench's summary, then each replica's
# prefix-cache hit rate from its own /status; reports in WORKDIR.
# --replicas N sets the affinity comparison's replica count (default 2);
# --replica-args 'ARGS' adds serve flags to every replica of both arms (the
# last of a flag wins: e.g. '--max-memory 80M --max-context 1024' bounds each
# replica's KV pool below the conversations' working set, as many users do).
# The schedule on which bench decided issue 26's targets on a 2-vCPU VM, in
# half its runs there (docs/benchmarks.md, session 35): each replica busy about
# a tenth of a slot, so a turn's TTFT is its own prefill, not a queue's wait:
#   bench/affinity.sh affinity --model build/bench-tests/bench-mid.gguf --rounds 7 \
#       --replica-args '--max-memory 92M --max-context 1024' -- --sessions 32 --session-turns 4 \
#       --session-first-tokens 256 --session-turn-tokens 64 --session-max-tokens 2 \
#       --session-stagger-ms 150 --session-think-ms 6000
#   bench/affinity.sh affinity|split [--model FILE] [--rounds 3] [--replicas 2] [--replica-args 'ARGS']
#                     [--baseline roundrobin|random] [--dir WORKDIR] [-- BENCH ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: bench/affinity.sh affinity|split [--model FILE] [--rounds N] [--dir WORKDIR] [-- BENCH ARGS]}
shift
model=build/models/default.gguf rounds=3 replicas=2 rargs="" baseline=roundrobin dir=$(mktemp -d /tmp/splash-affinity.XXXXXX)
while [ $# -gt 0 ]; do
    case "$1" in
        --model) model=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --replicas) replicas=$2; shift 2 ;;
        --replica-args) rargs=$2; shift 2 ;;
        --baseline) baseline=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "bench/affinity.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
[[ $baseline == roundrobin || $baseline == random ]] || { echo "bench/affinity.sh: --baseline roundrobin or random" >&2; exit 2; }
export SPLASH=${SPLASH:-$PWD/build/splash}
case $which in
    affinity) a=("$replicas" --balance "$baseline") b=("$replicas" --balance affinity) ;;
    split) a=(1 --balance affinity) b=(2 --balance affinity) ;;
    *) echo "bench/affinity.sh: affinity or split, not '$which'" >&2; exit 2 ;;
esac
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa=$(free_port) pb=$(free_port)
down() { for arm in a b; do SPLASH_CLUSTER_DIR=$dir/$arm bash deploy/cluster.sh down || true; done; }
trap down EXIT
read -r -a extra <<<"$rargs"
SPLASH_CLUSTER_DIR=$dir/a bash deploy/cluster.sh up "${a[@]}" --model "$model" --port "$pa" -- "${extra[@]}"
SPLASH_CLUSTER_DIR=$dir/b bash deploy/cluster.sh up "${b[@]}" --model "$model" --port "$pb" -- "${extra[@]}"
"$SPLASH" bench --baseline-url "http://127.0.0.1:$pa" --candidate-url "http://127.0.0.1:$pb" \
    --workload sessions --rounds "$rounds" --warmup 2 --decide session_prefill,session_ttft \
    --work-dir "$dir/bench" --quiet "$@" || true
# each replica's own count over the whole run (warm-ups included), from its /status
for arm in a b; do
    for f in "$dir/$arm"/r*.port; do
        curl -s "http://127.0.0.1:$(cat "$f")/status" | python3 -c '
import json, sys
s = json.load(sys.stdin)
hit, prompt, rid = s["cache"]["hit_tokens"], s["requests"]["prompt_tokens"], s["replica_id"]
print(f"  arm {sys.argv[1]} replica {rid}: /status prefix-cache hits {hit} of {prompt} prompt tokens "
      f"({100 * hit / max(prompt, 1):.1f} %)")' "$arm"
    done
done
