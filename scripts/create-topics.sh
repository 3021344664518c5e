#!/usr/bin/env bash
# create-topics.sh: what one CreateTopics request of many topics costs the controller: the
# metadata-log entries it commits and its wall time, on one node and on three.
#
# Each run starts a fresh cluster (one node: a one-voter cluster.toml; three nodes:
# scripts/local-cluster.sh), waits until every node is ready, and runs scripts/create-probe.go
# once: it waits until the metadata log stops growing from the cluster's start, then sends one
# CreateTopics of WREN_TOPICS topics of 1 partition (replication factor 1 on one node, 3 on
# three). Figures per run (see create-probe.go): create_ms, commits (the metadata
# quorum's high watermark after the answer minus before the request), drift (how far it moved
# in the second after, on its own); per mode the median, minimum and maximum over RUNS runs.
#
# Usage: scripts/create-topics.sh [RUNS]       (default 5)
# Environment:
#   WREN_BIN      the wren binary (default: built from this checkout); the probe works against
#                 older builds too (it needs DescribeQuorum v0 only), so to measure another
#                 commit build it there and pass it here
#   WREN_MODES    which modes to run, in order (default "single three")
#   WREN_TOPICS   topics in the one request (default 100)
#   WREN_DIR      where the runs' directories go (default: $TMPDIR or /tmp)
#   WREN_KEEP=1   keep the directory (configs, data, logs, per-run figures)
# Needs: go, python3 (free ports), curl. The load average is printed with each run: compare
# runs made under similar load.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs="${1:-5}"
modes="${WREN_MODES:-single three}"
topics="${WREN_TOPICS:-100}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] && ((runs <= 100)) || { echo "create-topics: RUNS must be 1..100, not $runs" >&2; exit 2; }
[[ "$topics" =~ ^[1-9][0-9]*$ ]] && ((topics <= 10000)) || { echo "create-topics: WREN_TOPICS must be 1..10000, not $topics" >&2; exit 2; }
for m in $modes; do
	[[ "$m" == single || "$m" == three ]] || { echo "create-topics: WREN_MODES: unknown mode $m (single, three)" >&2; exit 2; }
done

work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-create.XXXXXX")"
export CLUSTER_DIR=""
cleanup() {
	if [[ -n "$CLUSTER_DIR" && -d "$CLUSTER_DIR" ]]; then
		"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	fi
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "create-topics: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "create-topics: $*"; }

export WREN_BIN="${WREN_BIN:-}"
if [[ -z "$WREN_BIN" ]]; then
	WREN_BIN="$work/wren"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$WREN_BIN" .)
fi
probe="$work/create-probe"
(cd "$root" && go build -o "$probe" scripts/create-probe.go)

# shellcheck source=cluster-ports.sh
source "$here/cluster-ports.sh"

wait_ready() { # node timeout_s
	local deadline=$((SECONDS + $2))
	until curl -fsS "http://127.0.0.1:$((BASE_PORT + 10 * $1 + 2))/readyz" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then
			say "node $1 not ready within $2 s; its log: $CLUSTER_DIR/node$1.log"
			tail -5 "$CLUSTER_DIR/node$1.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

# one_run MODE I: a fresh cluster, one request; appends the probe's line to $work/MODE.txt.
one_run() {
	local mode=$1 i=$2 n nodes=(1) rf=1 out
	CLUSTER_DIR="$work/$mode-$i"
	BASE_PORT=$(free_base_port)
	export BASE_PORT
	mkdir -p "$CLUSTER_DIR"
	if [[ "$mode" == single ]]; then
		# A one-voter cluster in local-cluster.sh's layout, so that it starts and kills node 1.
		cat >"$CLUSTER_DIR/cluster.toml" <<CONF
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$((BASE_PORT + 11))"]

[node.1.broker]
log.dirs = ["$CLUSTER_DIR/data1"]
listeners = ["PLAINTEXT://127.0.0.1:$((BASE_PORT + 10))", "CONTROLLER://127.0.0.1:$((BASE_PORT + 11))"]
[node.1.http]
listen = "127.0.0.1:$((BASE_PORT + 12))"
CONF
	else
		nodes=(1 2 3)
		rf=3
	fi
	"$here/local-cluster.sh" start "${nodes[@]}" >/dev/null
	for n in "${nodes[@]}"; do wait_ready "$n" 60; done
	local addrs=""
	for n in "${nodes[@]}"; do addrs+="${addrs:+,}127.0.0.1:$((BASE_PORT + 10 * n))"; done
	if ! out=$(timeout 300 "$probe" -b "$addrs" -topics "$topics" -rf "$rf"); then
		say "$mode run $i: the probe failed; logs in $CLUSTER_DIR (WREN_KEEP=1 keeps them)"
		return 1
	fi
	out+=" load=$(cut -d' ' -f1 /proc/loadavg)"
	say "$mode run $i: $out"
	echo "$out" >>"$work/$mode.txt"
	"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	[[ "${WREN_KEEP:-}" == 1 ]] || rm -rf "$CLUSTER_DIR"
}

# stats MODE KEY: median, min and max of KEY over the mode's runs.
stats() {
	sed -n "s/.*\b$2=\([0-9][0-9.]*\).*/\1/p" "$work/$1.txt" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "no runs"; exit }
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "median %g (min %g, max %g, n=%d)", med, v[1], v[NR], NR
		}'
}

say "$("$WREN_BIN" version 2>/dev/null | head -1 || true); $runs runs per mode ($modes), $topics topics in one request; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $modes; do
	for i in $(seq 1 "$runs"); do one_run "$mode" "$i"; done
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $modes; do
	say "$mode: create_ms $(stats "$mode" create_ms); commits $(stats "$mode" commits); drift $(stats "$mode" drift); errors $(stats "$mode" errors)"
done
