#!/usr/bin/env bash
# cert-rotation.sh: the time to rotate the peers' mutual-TLS certificates across three wren
# nodes on loopback while an acks=all producer runs, and what the producer saw meanwhile.
#
# It builds wren (scripts/build.sh) and a TLS probe (scripts/cert-rotation-probe.go), writes one
# config for three nodes (scripts/local-cluster.sh) with the CONTROLLER listener on mutual TLS
# (certificates of `wren cluster certs init`), gives each node its own copy of ca.pem and its
# node-N.pem (replacing one node's files touches that node only), starts the nodes a random 0..5 s
# apart (as on three hosts, their 5 s file checks are then out of phase) and waits for a
# controller. It creates a topic of 3 partitions at RF 3 with min.insync.replicas 2 and starts
# `wren perf produce --acks all --throughput WREN_RATE`, which runs throughout. Then, as
# `wren cluster certs rotate --help` says, each file copied beside the old one and renamed over:
#   ca rotation    rotate --new-ca; ca.pem (new + old CA) to every node at once; node-N.pem to
#                  node 1, 2, 3, one at a time; rotate --drop-old-ca; ca.pem (new CA only) to
#                  every node at once
#   leaf rotation  rotate (same CA); node-N.pem to node 1, 2, 3, one at a time
# After each copy it waits until that node has reloaded: a new 'TLS certificate reloaded' line
# in its log, and, for a node certificate, until a TLS dial to its CONTROLLER listener is
# served the new certificate (the probe). Every wait is bounded by WREN_STEP_TIMEOUT. A reload
# keeps open connections, so the peers still talk over connections made before the rotations;
# last, node 3 is restarted under load, which makes every connection to and from it anew with
# the rotated files only.
#
# Figures, per rotation (and for the restart):
#   total_ms            from the rotate command to the last node's reload
#   per step: reload_ms from the copy to the node's reload line (its log, to the millisecond)
#             wait_ms   from the copy to the script seeing the reload (and the probe agreeing)
#   acks, max_latency_ms  records the producer acknowledged in the reporting windows that end
#                       in the rotation, and the highest produce latency among them
#   longest_ack_gap_ms  the longest time between two of the producer's reporting lines, minus
#                       one interval: a line comes each WREN_REPORT_INTERVAL in which some
#                       record was acknowledged, so this is the longest run of empty windows
#                       (0: acks in every window; good to one interval)
#   refused             'refusing peer' and 'peer refused this node' lines in the node logs in
#                       that time (any is a failed step; they are printed at the end), with the
#                       controller role changes, ISR changes and lost peer connections logged
# and the same producer figures for its first second (it asks for a producer id and metadata)
# and for WREN_WARMUP seconds of load with no rotation before, between and after (the
# baseline); for the whole run, the producer's acknowledged records and errors,
# and the records read back with `wren perf consume` (every acknowledged one must be there).
#
# Usage: scripts/cert-rotation.sh [RUNS]        (default 1)
# Environment:
#   WREN_BIN              the wren binary (default: scripts/build.sh from this checkout)
#   WREN_RATE             records/s of the producer (default 200)
#   WREN_RECORD_SIZE      bytes per record (default 100)
#   WREN_REPORT_INTERVAL  the producer's reporting interval (default 50ms)
#   WREN_WARMUP           seconds of load with no rotation before, between and after (default 5)
#   WREN_STEP_TIMEOUT     seconds to wait for one node's reload (default 30)
#   WREN_DIR              where the run's directory goes (default: $TMPDIR or /tmp)
#   WREN_KEEP=1           keep the directory (config, certificates, logs, producer output)
# Needs: go, python3 (free ports, JSON), curl. The machine's load shows in the figures: the
# script prints the load average at the start and the end of each run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs="${1:-1}"
rate="${WREN_RATE:-200}"
size="${WREN_RECORD_SIZE:-100}"
interval="${WREN_REPORT_INTERVAL:-50ms}"
warmup="${WREN_WARMUP:-5}"
step_timeout="${WREN_STEP_TIMEOUT:-30}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] && ((runs <= 20)) || { echo "cert-rotation: RUNS must be 1..20, not $runs" >&2; exit 2; }
[[ "$rate" =~ ^[1-9][0-9]*$ ]] || { echo "cert-rotation: WREN_RATE must be a positive integer, not $rate" >&2; exit 2; }
[[ "$size" =~ ^[0-9]+$ ]] || { echo "cert-rotation: WREN_RECORD_SIZE must be a number of bytes, not $size" >&2; exit 2; }
[[ "$interval" =~ ^([1-9][0-9]*)ms$ ]] || { echo "cert-rotation: WREN_REPORT_INTERVAL must be milliseconds (50ms), not $interval" >&2; exit 2; }
interval_ms=${BASH_REMATCH[1]}
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "cert-rotation: WREN_WARMUP must be whole seconds, not $warmup" >&2; exit 2; }
[[ "$step_timeout" =~ ^[1-9][0-9]*$ ]] || { echo "cert-rotation: WREN_STEP_TIMEOUT must be whole seconds, not $step_timeout" >&2; exit 2; }

work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-cert-rotation.XXXXXX")"
export CLUSTER_DIR=""
producer_pid="" pipe_pid=""
cleanup() {
	if [[ -n "$producer_pid" ]]; then kill "$producer_pid" 2>/dev/null || true; fi
	if [[ -n "$CLUSTER_DIR" && -d "$CLUSTER_DIR" ]]; then
		"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	fi
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "cert-rotation: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "cert-rotation: $*"; }
die() { say "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }

export WREN_BIN="${WREN_BIN:-}"
if [[ -z "$WREN_BIN" ]]; then
	WREN_BIN="$work/wren"
	"$here/build.sh" "$WREN_BIN"
fi
probe="$work/cert-rotation-probe"
(cd "$root" && go build -o "$probe" scripts/cert-rotation-probe.go)

# shellcheck source=cluster-ports.sh
source "$here/cluster-ports.sh"

peer_addr() { echo "127.0.0.1:$((BASE_PORT + 10 * $1 + 1))"; }
http_port() { echo $((BASE_PORT + 10 * $1 + 2)); }

wait_ready() { # node timeout_s
	local deadline=$((SECONDS + $2))
	until curl -fsS "http://127.0.0.1:$(http_port "$1")/readyz" >/dev/null 2>&1; do
		((SECONDS <= deadline)) || { tail -5 "$CLUSTER_DIR/node$1.log" >&2; die "node $1 not ready within $2 s; its log: $CLUSTER_DIR/node$1.log"; }
		sleep 0.05
	done
}

# install NODE FILE: copies FILE of the certificate directory to the node's own directory as an
# operator does (beside the old one, then renamed over it); prints when, in unix ms: just before
# the rename, since the node may reload before a command after it runs.
install() {
	local dst="$CLUSTER_DIR/node$1-certs/$2"
	cp "$certs/$2" "$dst.new"
	now_ms
	mv -f "$dst.new" "$dst"
}

reloads() { grep -c 'msg="TLS certificate reloaded" listener=CONTROLLER' "$CLUSTER_DIR/node$1.log" || true; }

# reloaded NODE BEFORE: whether node NODE logged more reloads than BEFORE; a file it could not
# load ends the run.
reloaded() {
	if grep -q 'TLS certificate not reloaded' "$CLUSTER_DIR/node$1.log"; then
		grep 'TLS certificate not reloaded' "$CLUSTER_DIR/node$1.log" | tail -1 >&2
		die "node $1 did not take its new files"
	fi
	(($(reloads "$1") > $2))
}

# reload_at NODE BEFORE: the time of node NODE's reload line after BEFORE of them (unix ms).
reload_at() {
	local line
	line=$(grep 'msg="TLS certificate reloaded" listener=CONTROLLER' "$CLUSTER_DIR/node$1.log" | sed -n "$(($2 + 1))p")
	date -u -d "$(sed -n 's/^time=\([^ ]*\) .*/\1/p' <<<"$line")" +%s%3N
}

# wait_reload NODE BEFORE COPIED_MS [WANT]: waits until node NODE logs more reloads than BEFORE
# (and, with WANT, a file of the certificate directory, until it serves that certificate);
# prints "reload_ms=… wait_ms=…".
wait_reload() {
	local n=$1 before=$2 copied=$3 want=${4:-} deadline=$((SECONDS + step_timeout)) seen
	until reloaded "$n" "$before"; do
		((SECONDS <= deadline)) || die "node $n logged no reload within $step_timeout s of the copy"
		sleep 0.02
	done
	if [[ -n "$want" ]]; then
		"$probe" -addr "$(peer_addr "$n")" -node "$n" -cert "$certs/$want" -ca "$certs/ca.pem" \
			-want "$certs/$want" -timeout "${step_timeout}s" >"$run/probe.txt" || die "node $n: the probe failed"
	fi
	seen=$(now_ms)
	echo "reload_ms=$(($(reload_at "$n" "$before") - copied)) wait_ms=$((seen - copied))"
}

# step WHAT NODE FILE [WANT]: one file to one node, then the wait; prints the step's line.
step() {
	local what=$1 n=$2 file=$3 want=${4:-} before copied figures
	before=$(reloads "$n")
	copied=$(install "$n" "$file")
	figures=$(wait_reload "$n" "$before" "$copied" "$want")
	echo "$what node $n: $figures"
}

rotate() { "$WREN_BIN" cluster certs rotate -c "$CLUSTER_DIR/cluster.toml" --dir "$certs" "$@" >>"$run/rotate.txt" 2>&1 || { cat "$run/rotate.txt" >&2; die "wren cluster certs rotate $* failed"; }; }

# every_node WHAT: ca.pem to the three nodes at once, then one wait for all; a line per node.
every_node() {
	local what=$1 n before=() copied=() seen=() left=3 deadline=$((SECONDS + step_timeout))
	for n in 1 2 3; do
		before[n]=$(reloads "$n")
		copied[n]=$(install "$n" ca.pem)
	done
	while ((left > 0)); do
		for n in 1 2 3; do
			if [[ -z "${seen[n]:-}" ]] && reloaded "$n" "${before[n]}"; then
				seen[n]=$(now_ms)
				left=$((left - 1))
			fi
		done
		((left == 0)) && break
		((SECONDS <= deadline)) || die "not every node logged a reload within $step_timeout s of the copies"
		sleep 0.02
	done
	for n in 1 2 3; do
		echo "$what node $n: reload_ms=$(($(reload_at "$n" "${before[n]}") - copied[n])) wait_ms=$((seen[n] - copied[n]))"
	done
}

# ca_rotation and leaf_rotation print one line per node step.
ca_rotation() {
	local n
	rotate --new-ca
	every_node "CA bundle (new+old) to"
	for n in 1 2 3; do step "new-CA certificate to" "$n" "node-$n.pem" "node-$n.pem"; done
	rotate --drop-old-ca
	every_node "CA bundle (new only) to"
}
leaf_rotation() {
	local n
	rotate
	for n in 1 2 3; do step "new certificate to" "$n" "node-$n.pem" "node-$n.pem"; done
}

# producer_figures FROM_MS TO_MS: the producer's reporting lines in (FROM, TO + interval].
producer_figures() {
	awk -v a="$1" -v b="$2" -v iv="$interval_ms" '
		$3 != "records" || $0 ~ /99\.9th/ { next }
		{ t = int($1 / 1000) }
		t <= a { last = t; next }
		t > b + iv { exit }
		{
			acks += $2
			for (i = 1; i < NF; i++) if ($(i + 1) == "ms" && $(i + 2) == "max") m = $i + 0
			if (m > maxlat) maxlat = m
			if (last != "" && t - last > gap) gap = t - last
			last = t
		}
		END {
			g = gap - iv; if (g < 0) g = 0
			printf "acks=%d max_latency_ms=%.1f longest_ack_gap_ms=%d", acks, maxlat, g
		}' "$run/producer.txt"
}

# log_figures MARKS: what the node logs say after the byte offsets MARKS (one per node).
log_figures() {
	local marks=($1) n refused=0 roles=0 isr=0 lost=0 text
	for n in 1 2 3; do
		text=$(tail -c +"$((marks[n - 1] + 1))" "$CLUSTER_DIR/node$n.log")
		refused=$((refused + $(grep -cE 'refusing peer|peer refused this node' <<<"$text" || true)))
		roles=$((roles + $(grep -c 'metadata quorum: role changed' <<<"$text" || true)))
		isr=$((isr + $(grep -c 'ISR change committed' <<<"$text" || true)))
		lost=$((lost + $(grep -c 'connection to peer lost' <<<"$text" || true)))
		grep -E 'refusing peer|peer refused this node' <<<"$text" | sed "s/^/  node $n: /" >>"$run/refusals.txt" || true
	done
	echo "refused=$refused role_changes=$roles isr_changes=$isr peer_connections_lost=$lost"
}

log_marks() { local n out=""; for n in 1 2 3; do out+="$(stat -c %s "$CLUSTER_DIR/node$n.log") "; done; echo "$out"; }

# quiet NAME SECONDS: load and no rotation for SECONDS; prints the producer's figures for it,
# the baseline of a rotation's.
quiet() {
	local start end
	start=$(now_ms)
	sleep "$2"
	end=$(now_ms)
	say "$1: no rotation for $2 s: $(producer_figures "$start" "$((end - interval_ms))")"
}

# isr_full: whether every partition of the topic has three in-sync replicas.
isr_full() {
	[[ $("$WREN_BIN" topic describe -b "$boot" --timeout 5s --format json rotation 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
ps = [p for t in (d if isinstance(d, list) else d.get("topics", [d])) for p in t.get("partitions", [])]
print("ok" if len(ps) == 3 and all(len(p.get("isr", [])) == 3 for p in ps) else "no")' 2>/dev/null) == ok ]]
}

# restart_check NODE: after the rotations every open peer connection still dates from before
# them (a reload keeps open connections); a node restarted under load makes every connection to
# and from it anew, with the rotated files only.
restart_check() {
	local n=$1 marks start ready deadline
	marks=$(log_marks)
	start=$(now_ms)
	"$here/local-cluster.sh" stop "$n" >/dev/null
	"$here/local-cluster.sh" start "$n" >/dev/null
	wait_ready "$n" 60
	ready=$(now_ms)
	deadline=$((SECONDS + 60))
	until isr_full; do
		((SECONDS <= deadline)) || die "node $n not back in every ISR within 60 s of its restart"
		sleep 0.1
	done
	local end
	end=$(now_ms)
	sleep "$(awk -v iv="$interval_ms" 'BEGIN { printf "%.3f", 2 * iv / 1000 }')"
	say "restart of node $n after the rotations: ready_ms=$((ready - start)) full_isr_ms=$((end - start)) $(producer_figures "$start" "$end") $(log_figures "$marks")"
}

# timed NAME FUNCTION: runs a rotation and prints its figures.
timed() {
	local name=$1 fn=$2 marks start end
	marks=$(log_marks)
	start=$(now_ms)
	"$fn" >"$run/$name.steps"
	end=$(now_ms)
	sed "s/^/cert-rotation: $name: /" "$run/$name.steps"
	# The producer's reporting line for the last window comes up to an interval later.
	sleep "$(awk -v iv="$interval_ms" 'BEGIN { printf "%.3f", 2 * iv / 1000 }')"
	say "$name: total_ms=$((end - start)) $(producer_figures "$start" "$end") $(log_figures "$marks")"
}

one_run() {
	local i=$1 n
	CLUSTER_DIR="$work/run$i"
	run=$CLUSTER_DIR
	mkdir -p "$run"
	BASE_PORT=$(free_base_port)
	export BASE_PORT
	certs="$CLUSTER_DIR/certs"
	: >"$run/refusals.txt"
	local conf
	conf=$("$here/local-cluster.sh" config)
	"$WREN_BIN" cluster certs init -c "$conf" --dir "$certs" >"$run/init.txt" 2>>"$run/rotate.txt"
	# init prints one shared trust store; each node gets its own copy here, so the config names
	# each node's files in its own table.
	{
		echo
		echo "[broker]"
		grep '^listener.security.protocol.map = ' "$run/init.txt"
		for n in 1 2 3; do
			mkdir -p "$CLUSTER_DIR/node$n-certs"
			install "$n" ca.pem >/dev/null
			install "$n" "node-$n.pem" >/dev/null
			printf '\n[node.%d.security]\nssl.keystore.location = "%s"\nssl.truststore.location = "%s"\n' \
				"$n" "$CLUSTER_DIR/node$n-certs/node-$n.pem" "$CLUSTER_DIR/node$n-certs/ca.pem"
		done
	} >>"$conf"
	for n in 1 2 3; do "$WREN_BIN" config check "$conf" --node-id "$n" >/dev/null; done
	# Nodes on three hosts start at unrelated times, so their 5 s file checks are out of phase;
	# started together here, they would check at the same moments and every step after the first
	# would wait a full interval. Each node starts a random 0..5 s after the one before.
	for n in 1 2 3; do
		((n == 1)) || sleep "$((RANDOM % 5)).$((RANDOM % 10))"
		"$here/local-cluster.sh" start "$n" >/dev/null
	done
	for n in 1 2 3; do wait_ready "$n" 60; done
	boot=$("$here/local-cluster.sh" bootstrap)
	local deadline=$((SECONDS + 60))
	until [[ $("$WREN_BIN" cluster info -b "$boot" --timeout 5s --format json 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["controller"])' 2>/dev/null) == [1-3] ]]; do
		((SECONDS <= deadline)) || die "no controller within 60 s"
		sleep 0.2
	done
	"$WREN_BIN" topic create -b "$boot" -p 3 -r 3 -c min.insync.replicas=2 rotation >/dev/null
	deadline=$((SECONDS + 60))
	until isr_full; do
		((SECONDS <= deadline)) || die "the topic's partitions have no full ISR within 60 s"
		sleep 0.2
	done
	for n in 1 2 3; do "$probe" -addr "$(peer_addr "$n")" -node "$n" -cert "$certs/node-$n.pem" -ca "$certs/ca.pem" >/dev/null; done

	say "run $i: 3 nodes up (ports from $BASE_PORT), mutual TLS between them; producer: $rate records/s of $size bytes, acks=all; load $(cut -d' ' -f1-3 /proc/loadavg)"
	# The producer runs until SIGTERM (its --duration only bounds a run this script lost); each
	# of its lines gets the time it came, in unix microseconds.
	(
		"$WREN_BIN" perf produce -b "$boot" -t rotation --acks all --throughput "$rate" --record-size "$size" \
			--reporting-interval "$interval" --duration 30m --timeout 60s 2>"$run/producer.err" &
		echo $! >"$run/producer.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >"$run/producer.rc"
	) | while IFS= read -r line; do echo "${EPOCHREALTIME//[.,]/} $line"; done >"$run/producer.txt" &
	pipe_pid=$!
	deadline=$((SECONDS + 10))
	until [[ -s "$run/producer.pid" ]]; do
		((SECONDS <= deadline)) || die "the producer did not start"
		sleep 0.05
	done
	producer_pid=$(cat "$run/producer.pid")
	local started
	started=$(now_ms)
	sleep 1
	grep -q 'records sent' "$run/producer.txt" || die "the producer acknowledged nothing in its first second: $(cat "$run/producer.err")"
	say "start: the producer's first second: $(producer_figures "$((started - 1000))" "$(($(now_ms) - interval_ms))")"
	quiet "baseline" "$warmup"

	timed "ca rotation" ca_rotation
	quiet "between" "$warmup"
	timed "leaf rotation" leaf_rotation
	quiet "after" "$warmup"
	restart_check 3
	quiet "after the restart" "$warmup"

	kill -0 "$producer_pid" 2>/dev/null || die "the producer stopped before the end: $(cat "$run/producer.err")"
	kill -TERM "$producer_pid"
	deadline=$((SECONDS + 30))
	while kill -0 "$producer_pid" 2>/dev/null; do
		((SECONDS <= deadline)) || die "the producer did not stop within 30 s of SIGTERM"
		sleep 0.05
	done
	producer_pid=""
	wait "$pipe_pid" || true
	local acked errors final
	final=$(grep '99\.9th' "$run/producer.txt" | tail -1 | cut -d' ' -f2-)
	[[ -n "$final" ]] || die "the producer printed no final line: $(cat "$run/producer.err")"
	acked=$(awk '{ print $1 }' <<<"$final")
	say "producer (whole run): $final"
	# perf produce reports its failures at the end, with the first one's error. SIGTERM fails
	# the records still in flight with "context canceled"; when that is the first error, every
	# failure came from the stop (none is acknowledged, so none is counted as sent).
	errors=$(sed -n 's/.*: \([0-9]*\) of [0-9]* records: \(.*\)/\1 (first: \2)/p' "$run/producer.err" | tail -1)
	if [[ -z "$errors" ]]; then
		say "producer errors: 0"
	elif [[ "$errors" == *"(first: context canceled)" ]]; then
		say "producer errors: 0 before the stop; ${errors%% *} record(s) in flight at SIGTERM failed with context canceled"
	else
		say "producer errors: $errors"
	fi

	local ends read_back
	ends=$("$WREN_BIN" offsets -b "$boot" rotation | awk -F: '{ s += $3 } END { print s + 0 }')
	read_back=$("$WREN_BIN" perf consume -b "$boot" -t rotation --num-records "$ends" --timeout 15s --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["data_consumed_records"])')
	if ((read_back >= acked)); then
		say "verify: acknowledged $acked, log end offsets sum to $ends, read back $read_back: every acknowledged record is there"
	else
		die "verify: acknowledged $acked but read back only $read_back (log end offsets sum to $ends)"
	fi
	if [[ -s "$run/refusals.txt" ]]; then
		say "refusals logged during the rotations:"
		cat "$run/refusals.txt"
	fi
	say "run $i: load after $(cut -d' ' -f1-3 /proc/loadavg)"
	"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
}

say "$("$WREN_BIN" version 2>/dev/null | head -1 || true); $runs run(s); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$runs"); do one_run "$i"; done
