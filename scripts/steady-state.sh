#!/usr/bin/env bash
# steady-state.sh: what an idle three-node wren cluster costs. Starts a local three-node cluster
# (scripts/local-cluster.sh, default timeouts, loopback, free ports), waits until it has settled
# (one controller every node agrees on, every broker registered), then samples every node's
# /metrics at the start and at the end of DURATION and prints, per node:
#   - controller elections (new controller epochs) during DURATION: the target is none
#   - control traffic on the CONTROLLER listener (handshakes, metadata quorum messages, broker
#     heartbeats): bytes/s and messages/s sent and received
#   - replication traffic on the same listener (followers' fetches of __consumer_offsets and any
#     other partition; idle followers long-poll), bytes/s and messages/s
#   - CPU time used during DURATION (process_cpu_seconds_total) and the share of one core
# then, unless WREN_STEADY_CREATE=0, the metadata commit latency: 100 topics created one at a
# time with CreateTopics sent to a node that is not the controller (forwarded), then 100 sent to
# the controller (`wren perf metadata`), p50/p99/max of the round trip.
#
# Usage: scripts/steady-state.sh [DURATION]     DURATION in seconds (default 600)
#
# Prints "ok   ..." or "FAIL ..." lines and the figures; exits non-zero if an election happened
# during DURATION, the controller changed, or a node stopped.
#
# Environment:
#   WREN_BIN             the wren binary (default: built from this checkout)
#   WREN_STEADY_KEEP     1: keep the work directory (configs, logs, metric samples)
#   WREN_STEADY_CREATE   0: skip the CreateTopics latency figures
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
duration=${1:-600}
[[ "$duration" =~ ^[0-9]+$ && "$duration" -gt 0 ]] || { echo "steady-state: DURATION must be a positive number of seconds, not $duration" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/wren-steady.XXXXXX")"
export CLUSTER_DIR="$work/cluster"
failed=0
cleanup() {
	local rc=$?
	"$root/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true
	# A node local-cluster.sh could not stop within its 30 s.
	for f in "$CLUSTER_DIR"/node*.pid; do
		[[ -f "$f" ]] && kill -KILL "$(cat "$f")" 2>/dev/null || true
	done
	if [[ $rc -ne 0 || $failed -ne 0 || ${WREN_STEADY_KEEP:-0} == 1 ]]; then
		echo "steady-state: work directory kept: $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z "${WREN_BIN:-}" ]]; then
	(cd "$root" && go build -o "$work/wren" .)
	export WREN_BIN="$work/wren"
fi
wren=$WREN_BIN

# shellcheck source=scripts/cluster-ports.sh
source "$root/scripts/cluster-ports.sh"
BASE_PORT=$(free_base_port)
export BASE_PORT
http() { echo $((BASE_PORT + 10 * $1 + 2)); }
client() { echo "127.0.0.1:$((BASE_PORT + 10 * $1))"; }

"$root/scripts/local-cluster.sh" start >/dev/null
echo "steady-state: three nodes on 127.0.0.1, base port $BASE_PORT, work directory $work"

# metric NODE NAME[{LABELS}]: the sample's value from the node's /metrics (empty if absent).
# /metrics through Python's urllib: curl is not on every machine this runs on.
scrape() {
	/usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
		"http://127.0.0.1:$(http "$1")/metrics" 2>/dev/null
}
metric() { scrape "$1" | awk -v m="$2" '$1 == m { print $2; exit }'; }

# Settled: every node names the same controller, sees three brokers and none down. Polled
# with a deadline: the first election waits for the election timeout.
deadline=$((SECONDS + 60))
while :; do
	ctrls="" brokers=""
	for n in 1 2 3; do
		ctrls+="$(metric "$n" wren_cluster_controller_id || true) "
		brokers+="$(metric "$n" wren_cluster_brokers || true)/$(metric "$n" wren_cluster_brokers_down || true) "
	done
	read -r c1 c2 c3 <<<"$ctrls"
	if [[ -n "$c1" && "$c1" != -1 && "$c1" == "$c2" && "$c2" == "$c3" && "$brokers" == "3/0 3/0 3/0 " ]]; then
		break
	fi
	if ((SECONDS >= deadline)); then
		echo "FAIL the cluster did not settle within 60 s (controllers: $ctrls; brokers/down: $brokers)"
		failed=1
		exit 1
	fi
	sleep 0.5
done
controller=$c1
echo "ok   settled: node $controller is the controller on every node"

sample() { # FILE
	for n in 1 2 3; do
		scrape "$n" | awk -v n="$n" '/^(wren_controller_|wren_quorum_|process_cpu_seconds_total|wren_cluster_controller_id)/ { print n, $1, $2 }'
	done >"$1"
	date +%s.%N >"$1.time"
}

# The machine's load is part of the figures: on a busy host the nodes' timers run late.
loadavg() { [[ -r /proc/loadavg ]] && cut -d' ' -f1-3 /proc/loadavg || echo unknown; }
sample "$work/start"
load_start=$(loadavg)
echo "steady-state: idle for $duration s ..."
sleep "$duration"
sample "$work/end"
load_end=$(loadavg)

elapsed=$(awk '{ s = $1 } END { print s }' "$work/end.time")
elapsed=$(awk -v a="$(cat "$work/start.time")" -v b="$elapsed" 'BEGIN { printf "%.1f", b - a }')

# delta NODE NAME: end minus start.
delta() {
	awk -v n="$1" -v m="$2" '
		FILENAME ~ /start$/ && $1 == n && $2 == m { s = $3 }
		FILENAME ~ /end$/ && $1 == n && $2 == m { e = $3; seen = 1 }
		END { if (!seen) print "NA"; else printf "%.10g\n", e - s }' "$work/start" "$work/end"
}
# sum NODE PREFIX KINDS...: delta summed over kinds.
sum() {
	local n=$1 prefix=$2 total=0 k d
	shift 2
	for k in "$@"; do
		d=$(delta "$n" "$prefix{kind=\"$k\"}")
		[[ $d == NA ]] && { echo NA; return; }
		total=$(awk -v a="$total" -v b="$d" 'BEGIN { print a + b }')
	done
	echo "$total"
}
rate() { awk -v v="$1" -v t="$elapsed" 'BEGIN { if (v == "NA") print "NA"; else printf "%.1f", v / t }'; }

echo
echo "steady state over $elapsed s, controller node $controller, default timeouts; load average $load_start at the start, $load_end at the end ($(nproc) CPUs)"
printf '%-5s %-9s %-10s %-26s %-26s %-26s %-26s %s\n' NODE ELECTIONS EPOCH \
	"CONTROL SENT B/s (msg/s)" "CONTROL RECV B/s (msg/s)" "REPLICA SENT B/s (msg/s)" "REPLICA RECV B/s (msg/s)" "CPU s (% of a core)"
control=(handshake metalog app)
for n in 1 2 3; do
	el=$(delta "$n" wren_controller_elections_total)
	epoch=$(awk -v n="$n" '$1 == n && $2 == "wren_controller_epoch" { print $3 }' "$work/end")
	now_ctrl=$(awk -v n="$n" '$1 == n && $2 == "wren_cluster_controller_id" { print $3 }' "$work/end")
	cs=$(sum "$n" wren_quorum_sent_bytes_total "${control[@]}")
	cm=$(sum "$n" wren_quorum_sent_messages_total "${control[@]}")
	cr=$(sum "$n" wren_quorum_received_bytes_total "${control[@]}")
	crm=$(sum "$n" wren_quorum_received_messages_total "${control[@]}")
	rs=$(sum "$n" wren_quorum_sent_bytes_total replica)
	rsm=$(sum "$n" wren_quorum_sent_messages_total replica)
	rr=$(sum "$n" wren_quorum_received_bytes_total replica)
	rrm=$(sum "$n" wren_quorum_received_messages_total replica)
	cpu=$(delta "$n" process_cpu_seconds_total)
	pct=$(awk -v c="$cpu" -v t="$elapsed" 'BEGIN { if (c == "NA") print "NA"; else printf "%.3f", 100 * c / t }')
	printf '%-5s %-9s %-10s %-26s %-26s %-26s %-26s %s\n' "$n" "$el" "$epoch" \
		"$(rate "$cs") ($(rate "$cm"))" "$(rate "$cr") ($(rate "$crm"))" \
		"$(rate "$rs") ($(rate "$rsm"))" "$(rate "$rr") ($(rate "$rrm"))" "$cpu ($pct%)"
	if [[ $el != 0 ]]; then
		echo "FAIL node $n saw $el controller election(s) while the cluster was idle"
		failed=1
	fi
	if [[ "$now_ctrl" != "$controller" ]]; then
		echo "FAIL node $n names controller ${now_ctrl:-none} at the end, $controller at the start"
		failed=1
	fi
done
echo

if [[ ${WREN_STEADY_CREATE:-1} != 0 ]]; then
	other=$((controller % 3 + 1))
	for target in "$other" "$controller"; do
		if ! "$wren" perf metadata -b "$(client "$target")" --node "$target" --topics 100 --prefix "steady-$target-"; then
			echo "FAIL wren perf metadata against node $target"
			failed=1
		fi
	done
	echo
fi

if [[ $failed == 0 ]]; then
	echo "ok   no election in $elapsed s of idle"
fi
exit "$failed"
