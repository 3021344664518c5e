#!/usr/bin/env bash
# failover.sh: the time to a new controller after SIGKILL of the controller process, on three
# wren processes on loopback, with normal disks and with a slow disk on the controller.
#
# Each run starts a fresh cluster (scripts/local-cluster.sh, default timeouts), creates a topic
# of 3 partitions at RF 3 with min.insync.replicas 2, produces with acks=all to the partition
# the controller leads for WREN_WARMUP, then SIGKILLs the controller and polls Metadata on both
# survivors every 10 ms (scripts/failover-probe.go). Figures:
#   new_controller_ms  from the kill until both survivors name the same new controller
#   election_start_ms  from the kill until the first survivor stands for election (its log)
#   fenced_ms          from the kill until the new controller fences the dead node (its log:
#                      broker.session.timeout.ms after its last heartbeat)
#   produce_ms         from the kill until the first record sent after it is acknowledged
#                      (acks=all; the producer refreshes metadata at most every 10 ms)
#   warmup_p50_ms      the median produce latency before the kill (shows the slow disk)
#   the controller changes the nodes showed during the warm-ups (a slow controller deposed
#   before the kill shows there; such runs are left out of the new-controller figures)
# and, per mode, the median, minimum and maximum of each over RUNS runs.
#
# The slow disk: wren built with the faultfs tag (broker/servefs_faultfs.go) delays every
# fsync, fdatasync and directory fsync of a node by WREN_FAULTFS_SYNC_DELAY once it gets
# SIGUSR1. Every node starts with the delay off; the probe sends SIGUSR1 to whichever node
# became the controller before the warm-up. The survivors' disks stay normal.
#
# Usage: scripts/failover.sh [RUNS]            (default 5)
# Environment:
#   WREN_BIN      the wren binary, built with `-tags faultfs` (default: built so from this
#                 checkout); to measure another commit, build it there with the tag
#   WREN_MODES    which modes to run, in order (default "normal slow")
#   WREN_SLOW     the sync delay of the slow disk (default 100ms)
#   WREN_WARMUP   produce this long before the kill (default 2s)
#   WREN_DIR      where the runs' directories go (default: $TMPDIR or /tmp)
#   WREN_KEEP=1   keep the directory (configs, data, logs, per-run figures)
# Needs: go, python3 (free ports), curl. The machine's load shows in every figure: the script
# prints the load average before and after; compare runs made under similar load.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs="${1:-5}"
modes="${WREN_MODES:-normal slow}"
slow="${WREN_SLOW:-100ms}"
warmup="${WREN_WARMUP:-2s}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] && ((runs <= 100)) || { echo "failover: RUNS must be 1..100, not $runs" >&2; exit 2; }
for m in $modes; do
	[[ "$m" == normal || "$m" == slow ]] || { echo "failover: WREN_MODES: unknown mode $m (normal, slow)" >&2; exit 2; }
done

work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-failover.XXXXXX")"
export CLUSTER_DIR=""
cleanup() {
	if [[ -n "$CLUSTER_DIR" && -d "$CLUSTER_DIR" ]]; then
		"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	fi
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "failover: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "failover: $*"; }

export WREN_BIN="${WREN_BIN:-}"
if [[ -z "$WREN_BIN" ]]; then
	WREN_BIN="$work/wren"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -tags faultfs -o "$WREN_BIN" .)
fi
probe="$work/failover-probe"
(cd "$root" && go build -o "$probe" scripts/failover-probe.go)

# shellcheck source=cluster-ports.sh
source "$here/cluster-ports.sh"

http_port() { echo $((BASE_PORT + 10 * $1 + 2)); }
wait_ready() { # node timeout_s
	local deadline=$((SECONDS + $2))
	until curl -fsS "http://127.0.0.1:$(http_port "$1")/readyz" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then
			say "node $1 not ready within $2 s; its log: $CLUSTER_DIR/node$1.log"
			tail -5 "$CLUSTER_DIR/node$1.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

# log_ms KILLED_UNIX_MS CONTROLLER REGEX: from the kill to the first line after it matching REGEX
# in a survivor's log (log times are to the millisecond), or -1.
log_ms() {
	local killed=$1 ctrl=$2 re=$3 best="" n t at
	for n in 1 2 3; do
		[[ "$n" == "$ctrl" ]] && continue
		while read -r t; do
			at=$(date -u -d "$t" +%s%3N)
			if ((at >= killed)); then
				[[ -z "$best" ]] || ((at < best)) && best=$at
				break
			fi
		done < <(grep -E "$re" "$CLUSTER_DIR/node$n.log" | sed -n 's/^time=\([^ ]*\) .*/\1/p')
	done
	if [[ -n "$best" ]]; then echo $((best - killed)); else echo -1; fi
}

# one_run MODE I: a fresh cluster, one kill; appends the probe's line to $work/MODE.txt.
one_run() {
	local mode=$1 i=$2 n nodes="" out flags=()
	CLUSTER_DIR="$work/$mode-$i"
	BASE_PORT=$(free_base_port)
	export BASE_PORT
	"$here/local-cluster.sh" config >/dev/null
	if [[ "$mode" == slow ]]; then
		export WREN_FAULTFS_SYNC_DELAY="$slow" WREN_FAULTFS_SYNC_DELAY_OFF=1
		flags=(-slow)
	else
		unset WREN_FAULTFS_SYNC_DELAY WREN_FAULTFS_SYNC_DELAY_OFF
	fi
	"$here/local-cluster.sh" start >/dev/null
	for n in 1 2 3; do wait_ready "$n" 60; done
	if [[ "$mode" == slow ]] && ! grep -q 'faultfs build: syncs are slowed down' "$CLUSTER_DIR/node1.log"; then
		say "$WREN_BIN is not a faultfs build (go build -tags faultfs): SIGUSR1 would kill it"
		return 1
	fi
	for n in 1 2 3; do
		nodes+="${nodes:+,}$n=$(cat "$CLUSTER_DIR/node$n.pid")@127.0.0.1:$((BASE_PORT + 10 * n))"
	done
	if ! out=$(timeout 300 "$probe" -nodes "$nodes" -warmup "$warmup" "${flags[@]}"); then
		say "$mode run $i: the probe failed; logs in $CLUSTER_DIR (WREN_KEEP=1 keeps them)"
		return 1
	fi
	local c killed
	c=$(sed 's/^controller=\([0-9]*\).*/\1/' <<<"$out")
	killed=$(sed 's/.*killed_unix_ms=\([0-9]*\).*/\1/' <<<"$out")
	out+=" election_start_ms=$(log_ms "$killed" "$c" 'role changed.* role=(pre-candidate|candidate) ')"
	out+=" fenced_ms=$(log_ms "$killed" "$c" "broker fenced\" broker=$c ")"
	if [[ "$mode" == slow ]]; then
		grep -q 'sync delay switched.*on=true' "$CLUSTER_DIR/node$c.log" || {
			say "$mode run $i: node $c never logged its sync delay on"
			return 1
		}
	fi
	say "$mode run $i: $out"
	echo "$out" >>"$work/$mode.txt"
	"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	[[ "${WREN_KEEP:-}" == 1 ]] || rm -rf "$CLUSTER_DIR"
}

# stats MODE KEY [FILTER]: median, min and max of KEY over the mode's runs (those whose line
# matches FILTER).
stats() {
	grep -e "${3:-}" "$work/$1.txt" | sed -n "s/.*\b$2=\([0-9][0-9.]*\).*/\1/p" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "no runs"; exit }
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "median %.0f ms (min %.0f, max %.0f, n=%d)", med, v[1], v[NR], NR
		}'
}

say "$("$WREN_BIN" version 2>/dev/null | head -1 || true); $runs runs per mode ($modes), slow disk: syncs +$slow on the controller; warm-up $warmup; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $modes; do
	for i in $(seq 1 "$runs"); do one_run "$mode" "$i"; done
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $modes; do
	at='controller_at_kill=true'
	moved=$(grep -c 'controller_at_kill=false' "$work/$mode.txt" || true)
	say "$mode: new controller $(stats "$mode" new_controller_ms "$at"); produce again $(stats "$mode" produce_ms)"
	say "$mode: a survivor stands for election $(stats "$mode" election_start_ms "$at"); the dead node fenced $(stats "$mode" fenced_ms)"
	changes=$(sed -n 's/.*warmup_controller_changes=\([0-9]*\).*/\1/p' "$work/$mode.txt" | awk '{ s += $1 } END { print s + 0 }')
	if ((changes > 0)); then changes+=", the first $(stats "$mode" warmup_first_change_ms) into a warm-up"; fi
	say "$mode: warm-up produce p50 $(stats "$mode" warmup_p50_ms); controller changes during the warm-ups: $changes"
	if ((moved > 0)); then
		say "$mode: WARNING: in $moved of $runs runs the nodes no longer named the controller at the kill (its slow disk had deposed it): the new-controller and election figures leave those runs out"
	fi
done
