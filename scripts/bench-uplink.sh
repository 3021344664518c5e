#!/usr/bin/env bash
# bench-uplink.sh: speed of an uplink's catch-up. One wren node (the edge)
# and one Apache Kafka broker (the far side, run by kafka-run.sh), both on
# loopback. It measures in turn:
#
#  1. the backlog: NUM_RECORDS records of 1 KiB on PARTITIONS partitions of
#     topic bench, written to the edge with `wren perf produce` (acks=all)
#     while the edge runs without its [uplink.bench] table;
#  2. the catch-up: the edge restarted with the link (remote.topic.prefix
#     "edge.", compression none); the time from the restart to the far side
#     holding all the records (the far topic's end offsets, polled with
#     `wren offsets` every 0.2 s), its MB/s (MiB of record values per
#     second, as `wren perf produce` counts them), also from the first far
#     record on (the time to it is the broker's start and the link's session
#     start, which may wait tail.settle.ms, 5 s unless WREN_UPLINK_SETTLE_MS
#     says otherwise, for far tails to hold still), and the edge's CPU
#     seconds (utime+stime from /proc/PID/stat) and peak RSS (VmHWM) over it
#     (and, at the end, its resident set split into anonymous and file pages):
#     a fresh process, so both are the catch-up's and the broker's own;
#  3. the reference: `wren perf produce` of the same records from the same
#     host straight to the same Kafka (acks=all, compression none, the same
#     partition count); goal: catch-up at 0.8x or more of its MB/s;
#  4. MirrorMaker 2 (Kafka's org.apache.kafka.connect.mirror.MirrorMaker,
#     what connect-mirror-maker.sh runs, in dedicated mode) moving the same
#     backlog from the edge (cluster alias wren) to the same Kafka (alias
#     kafka, topic wren.bench), exactly-once off (its default), its tasks.max
#     WREN_MM2_TASKS (default 1, MM2's own default), heartbeats, checkpoints
#     and ACL and config syncing off; the time from its start to all the
#     records on the far side, its JVM's CPU seconds and peak RSS. Goals: the
#     catch-up at 2x or more of MM2's MB/s, and the edge's peak RSS under a
#     tenth of MM2's.
#
# Then a table of the figures and ratios, with the load average before and
# after (the goals are printed, not enforced).
#
# The outage figure (WREN_UPLINK_OUTAGE_S set): with the link up on topic
# steady, `wren uplink pause bench`, a producer at a steady
# WREN_UPLINK_RATE bytes/s (1 KiB records; default 1048576) for the
# outage, then `wren uplink resume bench` while the producer keeps going;
# it prints the time from the resume to a zero backlog: the first poll (every
# 0.5 s) at which the far end offsets reach the edge's end offsets as read
# at the poll before, that is a backlog under half a second's writes. The
# issue's figure is WREN_UPLINK_OUTAGE_S=3600 on a quiet machine; a short
# outage (60) shows it works. NUM_RECORDS=0 runs the outage figure alone.
#
# Usage: scripts/bench-uplink.sh [NUM_RECORDS]   (default 1000000: 1 GiB)
#   scripts/bench-uplink.sh 300000                 a modest run on a shared machine
#   WREN_UPLINK_OUTAGE_S=60 scripts/bench-uplink.sh 0   the outage figure alone
#
# Environment:
#   WREN_BIN                  the wren binary (default: built from this checkout)
#   WREN_UPLINK_PARTITIONS=P  partitions of the backlog's topic (default 6)
#   WREN_UPLINK_OUTAGE_S=S    also measure an outage of S seconds (see above)
#   WREN_UPLINK_RATE=B        the outage's steady write rate, bytes/s (1048576)
#   WREN_UPLINK_SETTLE_MS=MS  the link's tail.settle.ms (default: unset, 5000)
#   WREN_UPLINK_TIMEOUT=S     deadline of every wait for records (default 900)
#   WREN_UPLINK_SKIP_MM2=1    leave MirrorMaker 2 out
#   WREN_MM2_TASKS=N          MM2's tasks.max (default 1)
#   WREN_MM2_HEAP_OPTS        MM2's JVM heap flags (default -Xms256m -Xmx2g,
#                             connect-mirror-maker.sh's)
#   WREN_KAFKA_VERSION, WREN_KAFKA_HOME, WREN_KAFKA_HEAP_OPTS
#                             as for kafka-run.sh
#
# MirrorMaker 2's classpath: kafka-fetch.sh's does not hold Kafka Connect,
# so this script resolves org.apache.kafka:connect-mirror (which pulls
# connect-runtime, connect-api, connect-json, connect-transforms and the
# clients) and log4j with Maven into WREN_KAFKA_HOME/mirror-libs, once
# (a stamp file holds the list it was made from); nothing of it is
# committed here.
#
# Needs: go, python3; java 17 and mvn for Kafka (kafka-fetch.sh).
# Everything listens on random free loopback ports; every process started
# and the working directory are removed on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
n="${1:-1000000}"
parts="${WREN_UPLINK_PARTITIONS:-6}"
outage="${WREN_UPLINK_OUTAGE_S:-}"
rate="${WREN_UPLINK_RATE:-1048576}"
settle="${WREN_UPLINK_SETTLE_MS:-}"
tmo="${WREN_UPLINK_TIMEOUT:-900}"
mm2_tasks="${WREN_MM2_TASKS:-1}"
kversion="${WREN_KAFKA_VERSION:-4.1.1}"
khome="${WREN_KAFKA_HOME:-$HOME/.cache/wren/kafka-$kversion}"
die() { echo "bench-uplink: $*" >&2; exit 2; }
[[ "$n" =~ ^[0-9]+$ ]] || die "NUM_RECORDS must be a non-negative integer, got $n"
[[ "$parts" =~ ^[1-9][0-9]*$ ]] || die "WREN_UPLINK_PARTITIONS must be a positive integer"
[[ -z "$outage" || "$outage" =~ ^[1-9][0-9]*$ ]] || die "WREN_UPLINK_OUTAGE_S must be a positive integer"
[[ "$rate" =~ ^[1-9][0-9]*$ ]] || die "WREN_UPLINK_RATE must be a positive integer (bytes/s)"
[[ -z "$settle" || "$settle" =~ ^[0-9]+$ ]] || die "WREN_UPLINK_SETTLE_MS must be a non-negative integer"
[[ "$tmo" =~ ^[1-9][0-9]*$ ]] || die "WREN_UPLINK_TIMEOUT must be a positive integer"
[[ "$mm2_tasks" =~ ^[1-9][0-9]*$ ]] || die "WREN_MM2_TASKS must be a positive integer"
((n > 0)) || [[ -n "$outage" ]] || die "NUM_RECORDS=0 measures nothing without WREN_UPLINK_OUTAGE_S"
for tool in go python3 java; do
	command -v "$tool" >/dev/null || { echo "bench-uplink: $tool not found on PATH" >&2; exit 1; }
done

work="$(mktemp -d)"
edge_pid=""
mm2_pid=""
prod_pid=""
# stop_pid PID: SIGTERM, then SIGKILL past 60 s; waits for it to go.
stop_pid() {
	local pid="$1" end=$((SECONDS + 60))
	kill -TERM "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= end)); then
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	for p in "$prod_pid" "$mm2_pid" "$edge_pid"; do
		[[ -n "$p" ]] && stop_pid "$p"
	done
	[[ -f "$work/kafka/kafka.pid" ]] && "$here/kafka-run.sh" stop "$work/kafka" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

wren="$work/wren"
if [[ -n "${WREN_BIN:-}" ]]; then
	cp "$WREN_BIN" "$wren"
else
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$wren" .)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
wait_port() { # host port deadline_s
	local end=$((SECONDS + $3))
	until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
		((SECONDS < end)) || { echo "bench-uplink: nothing listens on $1:$2" >&2; return 1; }
		sleep 0.05
	done
}

clk_tck=$(getconf CLK_TCK)
# cpu_s PID prints utime+stime of PID in seconds (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
cpu_s() { sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$clk_tck" '{printf "%.2f", ($12 + $13) / t}'; }
# hwm_mib PID prints the peak resident set of PID in MiB (VmHWM).
hwm_mib() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# rss_split PID prints the resident set of PID now, as anonymous (heap,
# stacks) and file-backed MiB.
rss_split() { awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} END {printf "anon %.1f MiB, file %.1f MiB", a / 1024, f / 1024}' "/proc/$1/status"; }
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# end_sum BOOTSTRAP TOPIC prints the sum of TOPIC's end offsets (0 while
# the topic does not exist or does not answer).
end_sum() {
	local out
	out=$("$wren" offsets -b "$1" --timeout 5s "$2" 2>/dev/null) || out=""
	awk -F: '{s += $NF} END {print s + 0}' <<<"$out"
}

# wait_records BOOTSTRAP TOPIC WANT PID: polls until TOPIC holds WANT
# records, within the deadline, checking that PID (the mover) lives; sets
# t_first (the first poll that saw a record) and t_done.
wait_records() {
	local boot="$1" topic="$2" want="$3" pid="$4" end=$((SECONDS + tmo)) got
	t_first=""
	while :; do
		got=$(end_sum "$boot" "$topic")
		[[ -z "$t_first" ]] && ((got > 0)) && t_first=$(now)
		((got >= want)) && break
		kill -0 "$pid" 2>/dev/null || { echo "bench-uplink: the mover (pid $pid) exited with $got of $want records on $topic" >&2; return 1; }
		((SECONDS < end)) || { echo "bench-uplink: $topic holds $got of $want records after ${tmo}s" >&2; return 1; }
		sleep 0.2
	done
	t_done=$(now)
	((got == want)) || { echo "bench-uplink: $topic holds $got records, want $want" >&2; return 1; }
}

# ---- the far side ----
kafka_boot=$("$here/kafka-run.sh" start "$work/kafka")

# ---- the edge ----
edge_port=$(free_port)
edge_cport=$(free_port)
edge_boot="127.0.0.1:$edge_port"
# edge_config LINK(0|1): the edge's config, with or without its link.
edge_config() {
	cat >"$work/wren.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$work/edge-data"]
listeners = ["PLAINTEXT://$edge_boot", "CONTROLLER://127.0.0.1:$edge_cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$edge_cport"]
[logging]
level = "warn"
TOML
	if [[ $1 == 1 ]]; then
		cat >>"$work/wren.toml" <<TOML
[uplink.bench]
bootstrap.servers = ["$kafka_boot"]
topics = ["bench", "steady"]
remote.topic.prefix = "edge."
compression = "none"
TOML
		[[ -n "$settle" ]] && echo "tail.settle.ms = $settle" >>"$work/wren.toml"
	fi
	return 0
}
start_edge() {
	edge_config "$1"
	"$wren" serve --config "$work/wren.toml" >>"$work/edge.log" 2>&1 &
	edge_pid=$!
	wait_port 127.0.0.1 "$edge_port" 30
}
stop_edge() { stop_pid "$edge_pid"; edge_pid=""; }

results="$work/results" # key value lines
: >"$results"
put() { echo "$1 $2" >>"$results"; }
mib=$(awk -v n="$n" 'BEGIN {print n * 1024 / 1048576}')

((n > 0)) && echo "== uplink catch-up: $n records of 1 KiB on $parts partitions ($(awk -v m="$mib" 'BEGIN {printf "%.0f", m}') MiB), edge wren -> Apache Kafka $kversion, loopback"
[[ -n "$outage" ]] && echo "== uplink outage: ${outage} s at $rate bytes/s (1 KiB records) on $parts partitions, edge wren -> Apache Kafka $kversion, loopback"
echo "   $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

if ((n > 0)); then
	# 1. The backlog, written while the edge has no link.
	mkdir -p "$work/edge-data"
	start_edge 0
	"$wren" perf produce -b "$edge_boot" --topic bench --num-records "$n" --record-size 1024 --acks all \
		--partitions "$parts" --compression none --reporting-interval 1h --timeout 120s --format json \
		>"$work/fill.json" 2>"$work/fill.err" || { cat "$work/fill.err" >&2; die "filling the backlog failed"; }
	printf "   backlog written: %.2f MB/s to the edge; the edge without a link: peak RSS %s MiB\n" \
		"$(json_field "$work/fill.json" mb_per_sec)" "$(hwm_mib "$edge_pid")"
	stop_edge

	# 2. The catch-up: the edge restarted with its link.
	t0=$(now)
	start_edge 1
	wait_records "$kafka_boot" edge.bench "$n" "$edge_pid"
	edge_cpu=$(cpu_s "$edge_pid")
	edge_rss=$(hwm_mib "$edge_pid")
	edge_split=$(rss_split "$edge_pid")
	up_s=$(awk -v a="$t0" -v b="$t_done" 'BEGIN {printf "%.2f", b - a}')
	up_stream_s=$(awk -v a="$t_first" -v b="$t_done" 'BEGIN {printf "%.2f", b - a}')
	put up_s "$up_s"
	put up_mbps "$(awk -v m="$mib" -v s="$up_s" 'BEGIN {printf "%.2f", m / s}')"
	put up_first_s "$(awk -v a="$t0" -v b="$t_first" 'BEGIN {printf "%.2f", b - a}')"
	put up_stream_mbps "$(awk -v m="$mib" -v s="$up_stream_s" 'BEGIN {printf "%.2f", (s > 0 ? m / s : 0)}')"
	put up_cpu "$edge_cpu"
	put up_rss "$edge_rss"
	echo "   catch-up: ${up_s} s (first far record after $(awk '$1 == "up_first_s" {print $2}' "$results") s), edge CPU ${edge_cpu} s, edge peak RSS ${edge_rss} MiB (at the end: $edge_split)"

	# 3. The reference: wren perf produce straight to Kafka.
	"$wren" perf produce -b "$kafka_boot" --topic ref --num-records "$n" --record-size 1024 --acks all \
		--partitions "$parts" --compression none --reporting-interval 1h --timeout 120s --format json \
		>"$work/ref.json" 2>"$work/ref.err" || { cat "$work/ref.err" >&2; die "the reference produce failed"; }
	put ref_mbps "$(json_field "$work/ref.json" mb_per_sec)"
	put ref_s "$(awk -v m="$mib" -v r="$(json_field "$work/ref.json" mb_per_sec)" 'BEGIN {printf "%.2f", m / r}')"
	printf "   wren perf produce to Kafka: %.2f MB/s\n" "$(json_field "$work/ref.json" mb_per_sec)"

	# 4. MirrorMaker 2, the same backlog from the same edge.
	if [[ "${WREN_UPLINK_SKIP_MM2:-}" != 1 ]]; then
		mm2_libs="$khome/mirror-libs"
		mm2_pom="$(cat <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>wren.reference</groupId>
  <artifactId>mirror-maker-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>$kversion</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
POM
)"
		if [[ ! -f "$mm2_libs/.fetched" || "$(cat "$mm2_libs/.fetched")" != "$mm2_pom" ]]; then
			command -v mvn >/dev/null || die "mvn not found on PATH (MirrorMaker 2's classpath)"
			echo "   resolving connect-mirror $kversion (Maven) ..."
			mkdir -p "$work/mm2pom"
			printf '%s\n' "$mm2_pom" >"$work/mm2pom/pom.xml"
			rm -rf "$mm2_libs.partial"
			timeout 600 mvn -B -Dstyle.color=never -f "$work/mm2pom/pom.xml" \
				org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
				-DincludeScope=runtime -DoutputDirectory="$mm2_libs.partial" >"$work/mm2pom/mvn.log" 2>&1 || {
				cat "$work/mm2pom/mvn.log" >&2
				die "Maven could not resolve connect-mirror $kversion"
			}
			[[ -f "$mm2_libs.partial/connect-mirror-$kversion.jar" ]] || die "connect-mirror-$kversion.jar missing from the resolved classpath"
			rm -rf "$mm2_libs"
			mv "$mm2_libs.partial" "$mm2_libs"
			printf '%s' "$mm2_pom" >"$mm2_libs/.fetched"
		fi
		cat >"$work/mm2.properties" <<PROPS
clusters = wren, kafka
wren.bootstrap.servers = $edge_boot
kafka.bootstrap.servers = $kafka_boot
wren->kafka.enabled = true
wren->kafka.topics = bench
kafka->wren.enabled = false
tasks.max = $mm2_tasks
replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
emit.heartbeats.enabled = false
emit.checkpoints.enabled = false
sync.group.offsets.enabled = false
sync.topic.acls.enabled = false
sync.topic.configs.enabled = false
refresh.topics.interval.seconds = 5
refresh.groups.enabled = false
PROPS
		t0=$(now)
		# shellcheck disable=SC2086
		setsid java ${WREN_MM2_HEAP_OPTS:--Xms256m -Xmx2g} -XX:+UseG1GC -Djava.awt.headless=true \
			-cp "$mm2_libs/*" -Dlog4j2.configurationFile="$khome/config/log4j2.yaml" \
			org.apache.kafka.connect.mirror.MirrorMaker "$work/mm2.properties" \
			>"$work/mm2.log" 2>&1 </dev/null &
		mm2_pid=$!
		if wait_records "$kafka_boot" wren.bench "$n" "$mm2_pid"; then
			mm2_cpu=$(cpu_s "$mm2_pid")
			mm2_rss=$(hwm_mib "$mm2_pid")
			mm2_split=$(rss_split "$mm2_pid")
			mm2_s=$(awk -v a="$t0" -v b="$t_done" 'BEGIN {printf "%.2f", b - a}')
			mm2_stream_s=$(awk -v a="$t_first" -v b="$t_done" 'BEGIN {printf "%.2f", b - a}')
			put mm2_s "$mm2_s"
			put mm2_mbps "$(awk -v m="$mib" -v s="$mm2_s" 'BEGIN {printf "%.2f", m / s}')"
			put mm2_first_s "$(awk -v a="$t0" -v b="$t_first" 'BEGIN {printf "%.2f", b - a}')"
			put mm2_stream_mbps "$(awk -v m="$mib" -v s="$mm2_stream_s" 'BEGIN {printf "%.2f", (s > 0 ? m / s : 0)}')"
			put mm2_cpu "$mm2_cpu"
			put mm2_rss "$mm2_rss"
			echo "   MirrorMaker 2: ${mm2_s} s, JVM CPU ${mm2_cpu} s, JVM peak RSS ${mm2_rss} MiB (at the end: $mm2_split)"
		else
			echo "   MirrorMaker 2 failed; the last lines of its log:" >&2
			tail -n 30 "$work/mm2.log" >&2 || true
		fi
		stop_pid "$mm2_pid"
		mm2_pid=""
	fi
fi

# ---- the outage figure ----
if [[ -n "$outage" ]]; then
	[[ -n "$edge_pid" ]] || { mkdir -p "$work/edge-data"; start_edge 1; }
	"$wren" uplink pause bench -b "$edge_boot" >/dev/null
	recps=$(awk -v r="$rate" 'BEGIN {printf "%.2f", r / 1024}')
	# The producer runs for the outage and the catch-up's deadline; it is
	# stopped once the backlog is zero.
	"$wren" perf produce -b "$edge_boot" --topic steady --duration "$((outage + tmo))s" --record-size 1024 \
		--throughput "$recps" --acks all --partitions "$parts" --compression none --reporting-interval 1h \
		--timeout 120s --format json >"$work/steady.json" 2>"$work/steady.err" &
	prod_pid=$!
	end=$((SECONDS + outage))
	while ((SECONDS < end)); do
		kill -0 "$prod_pid" 2>/dev/null || { cat "$work/steady.err" >&2; die "the steady producer exited during the outage"; }
		sleep 0.5
	done
	backlog=$(end_sum "$edge_boot" steady)
	far_before=$(end_sum "$kafka_boot" edge.steady)
	"$wren" uplink resume bench -b "$edge_boot" >/dev/null
	t0=$(now)
	prev=$(end_sum "$edge_boot" steady)
	end=$((SECONDS + tmo))
	caught=""
	while ((SECONDS < end)); do
		sleep 0.5
		far=$(end_sum "$kafka_boot" edge.steady)
		if ((far >= prev)); then
			caught=$(now)
			break
		fi
		kill -0 "$prod_pid" 2>/dev/null || { cat "$work/steady.err" >&2; die "the steady producer exited during the catch-up"; }
		prev=$(end_sum "$edge_boot" steady)
	done
	stop_pid "$prod_pid"
	prod_pid=""
	[[ -n "$caught" ]] || die "the outage's backlog was not zero within ${tmo}s of the resume"
	put out_s "$outage"
	put out_backlog "$backlog"
	put out_far_before "$far_before"
	put out_zero_s "$(awk -v a="$t0" -v b="$caught" 'BEGIN {printf "%.2f", b - a}')"
fi

echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n "$edge_pid" ]] && stop_edge

# ---- summary ----
awk -v n="$n" -v mib="$mib" -v rate="$rate" '
{ v[$1] = $2 }
function has(k) { return k in v }
function ratio(a, b) { return (has(a) && has(b) && v[b] > 0) ? sprintf("%.2fx", v[a] / v[b]) : "n/a" }
END {
	print ""
	if (n > 0) {
		printf "%-30s %9s %9s %14s %11s %10s %13s\n", "mover", "seconds", "MB/s", "MB/s from 1st", "1st rec s", "CPU s", "peak RSS MiB"
		if (has("up_s")) printf "%-30s %9.2f %9.2f %14.2f %11.2f %10.2f %13.1f\n", "wren uplink catch-up (edge)", v["up_s"], v["up_mbps"], v["up_stream_mbps"], v["up_first_s"], v["up_cpu"], v["up_rss"]
		if (has("ref_mbps")) printf "%-30s %9.2f %9.2f %14s %11s %10s %13s\n", "wren perf produce to Kafka", v["ref_s"], v["ref_mbps"], "-", "-", "-", "-"
		if (has("mm2_s")) printf "%-30s %9.2f %9.2f %14.2f %11.2f %10.2f %13.1f\n", "MirrorMaker 2 (JVM)", v["mm2_s"], v["mm2_mbps"], v["mm2_stream_mbps"], v["mm2_first_s"], v["mm2_cpu"], v["mm2_rss"]
		print ""
		printf "catch-up / perf produce:        %s (goal >= 0.8x)\n", ratio("up_mbps", "ref_mbps")
		printf "catch-up / MirrorMaker 2:       %s (goal >= 2x)\n", ratio("up_mbps", "mm2_mbps")
		printf "edge peak RSS / MM2 peak RSS:   %s (goal < 0.1x)\n", ratio("up_rss", "mm2_rss")
		printf "edge CPU / MM2 CPU:             %s\n", ratio("up_cpu", "mm2_cpu")
	}
	if (has("out_s")) {
		printf "outage of %d s at %.0f bytes/s: %d records waiting at the resume (%d on the far side), zero backlog %.2f s after the resume\n", v["out_s"], rate, v["out_backlog"], v["out_far_before"], v["out_zero_s"]
	}
}' "$results"
