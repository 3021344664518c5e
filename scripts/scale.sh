#!/usr/bin/env bash
# scale.sh: one node with many idle partitions. For each partition count:
#   1. creation time: topics of WREN_TOPIC_PARTITIONS partitions, WREN_CREATE_BATCH topics per
#      CreateTopics request,
#   2. idle resident memory (VmRSS) and open file descriptors, a few seconds after creation,
#      then the first clean stop: its time and, in a memory cgroup, what it charged to it,
#   3. restart after a clean stop (SIGTERM): ms from the fork to the first accepted connection
#      on the client port, and to every partition answering ListOffsets (`wren offsets`),
#   4. the same after SIGKILL,
# optionally with the broker under `ulimit -n WREN_NOFILE` and in a cgroup v1 memory limit, and
# the same start-up time and RSS for Apache Kafka 4.x (single-node KRaft, scripts/kafka-run.sh).
# The figures are wall-clock times on whatever else the machine runs: run it on a quiet host,
# and compare binaries on the same one.
#
# Usage: scripts/scale.sh [PARTITIONS ...]        (default: 1000 10000)
# Environment:
#   WREN_BIN               the wren binary to measure (default: built from this checkout)
#   WREN_DIR               where the temporary data directories go (default: $TMPDIR or /tmp)
#   WREN_TOPIC_PARTITIONS  partitions per topic (default 100)
#   WREN_CREATE_BATCH      topics per CreateTopics request (default 10)
#   WREN_RUNS              restarts measured of each kind; the median is shown (default 3)
#   WREN_NOFILE            run the broker under `ulimit -n` of this (e.g. 1024)
#   WREN_MEMORY_MB         run the broker in a cgroup v1 memory limit of this many MiB (e.g. 64;
#                          needs root and /sys/fs/cgroup/memory); its peak usage is shown
#   WREN_KAFKA=1           also measure Apache Kafka (fetched by scripts/kafka-fetch.sh, never
#                          committed) at the same counts: creation, RSS, clean restart
#   WREN_LOG_LEVEL         the broker's logging.level (default warn); its log is serve.log
#   WREN_KEEP=1            keep the data directories
# Needs: go (unless WREN_BIN is set), python3; java 17+ for WREN_KAFKA.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(1000 10000)
per_topic="${WREN_TOPIC_PARTITIONS:-100}"
batch="${WREN_CREATE_BATCH:-10}"
runs="${WREN_RUNS:-3}"
work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-scale.XXXXXX")"
pid=""
cg=""
kafka_work=""
cleanup() {
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null || true
	[[ -n "$kafka_work" ]] && "$here/kafka-run.sh" stop "$kafka_work" >/dev/null 2>&1 || true
	[[ -n "$cg" ]] && rmdir "$cg" 2>/dev/null || true
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "data kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

wren="${WREN_BIN:-}"
if [[ -z "$wren" ]]; then
	wren="$work/wren"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o "$wren" .)
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [[ -n "${WREN_MEMORY_MB:-}" ]]; then
	cg="/sys/fs/cgroup/memory/wren-scale-$$"
	mkdir "$cg"
	echo $((WREN_MEMORY_MB << 20)) >"$cg/memory.limit_in_bytes"
	echo 0 >"$cg/memory.swappiness" 2>/dev/null || true
fi

# start_timed CMD... : runs CMD in the background (under the ulimit and cgroup) and sets pid,
# first_ms (fork to first accepted connection on $port) and ready (fork to every one of $want
# partitions answering ListOffsets: "N ms"; `wren offsets` fails while any partition does not
# answer, so a broker that never serves them all says so after WREN_READY_TIMEOUT s).
# It fails when the broker exits or accepts no connection within 600 s.
start_timed() {
	python3 - "$port" "$want" "$wren" "$work/serve.log" "${WREN_NOFILE:-}" "$cg" "${WREN_READY_TIMEOUT:-120}" "$@" <<'PY' >"$work/start.out"
import os, re, socket, subprocess, sys, time
port, want, wren, logpath, nofile, cg, ready_s = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], float(sys.argv[7])
cmd = sys.argv[8:]
wrap = ""
if nofile:
    wrap += "ulimit -n %s; " % nofile
if cg:
    wrap += "echo $$ > %s/cgroup.procs; " % cg
log = open(logpath, "ab")
t0 = time.monotonic()
p = subprocess.Popen(["sh", "-c", wrap + 'exec "$@"', "sh"] + cmd, stdout=log, stderr=log, start_new_session=True)
deadline = t0 + 600
def alive():
    if p.poll() is not None:
        sys.exit("broker exited with %d; see %s" % (p.returncode, logpath))
    if time.monotonic() > deadline:
        p.kill()
        sys.exit("broker not ready within 600 s")
while True:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        t1 = time.monotonic()
        s.close()
        break
    except OSError:
        s.close()
        alive()
        time.sleep(0.0005)
line = re.compile(rb"^[^_][^:]*:\d+:\d+$", re.M)
while True:
    out = subprocess.run([wren, "offsets", "-b", "127.0.0.1:%d" % port], capture_output=True).stdout
    got = len(line.findall(out))
    if got >= want:
        ready = "%.0f_ms" % ((time.monotonic() - t0) * 1000)
        break
    alive()
    if time.monotonic() - t1 > ready_s:
        ready = "NOT_ALL_READY_after_%.0f_s" % (time.monotonic() - t0)
        break
    time.sleep(0.05)
print(p.pid, "%.0f" % ((t1 - t0) * 1000), ready)
PY
	local rc=0
	read -r pid first_ms ready_ms <"$work/start.out" || rc=1
	ready_ms="${ready_ms//_/ }"
	return $rc
}

stop_broker() { # signal
	kill "-$1" "$pid"
	for _ in $(seq 1 1200); do
		kill -0 "$pid" 2>/dev/null || { pid=""; return 0; }
		sleep 0.05
	done
	echo "scale: broker $pid did not stop within 60 s" >&2
	exit 1
}

rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# create_topics BOOTSTRAP PREFIX N: N partitions in topics of per_topic, batch topics a request.
create_topics() {
	local bs="$1" prefix="$2" n="$3" t=0 names=()
	while ((t * per_topic < n)); do
		names+=("$prefix$t")
		t=$((t + 1))
		if ((${#names[@]} == batch || t * per_topic >= n)); then
			"$wren" topic create -b "$bs" --timeout 300s -p "$per_topic" -r 1 "${names[@]}" >/dev/null
			names=()
		fi
	done
}

echo "scale: $("$wren" version 2>/dev/null | head -1 || true); $(nproc) cores; ulimit -n ${WREN_NOFILE:-$(ulimit -n)}${WREN_MEMORY_MB:+; memory cgroup ${WREN_MEMORY_MB} MiB}"
for n in "${counts[@]}"; do
	port=$(free_port)
	cport=$(free_port)
	data="$work/wren-$n"
	mkdir -p "$data"
	cat >"$work/wren-$n.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$data"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[http]
listen = "127.0.0.1:$(free_port)"
[logging]
level = "${WREN_LOG_LEVEL:-warn}"
TOML
	want=0
	start_timed "$wren" serve --config "$work/wren-$n.toml"
	t0=$(date +%s%N)
	create_topics "127.0.0.1:$port" scale "$n"
	want=$n
	# Creation is done when every partition answers.
	answered="not all partitions answer ListOffsets"
	for _ in $(seq 1 100); do
		if (($("$wren" offsets -b "127.0.0.1:$port" 2>/dev/null | grep -c '^scale[0-9]*:[0-9]*:[0-9]*$' || true) >= n)); then
			answered="all answering"
			break
		fi
		sleep 0.1
	done
	create_ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 3
	echo "wren $n partitions: created in $create_ms ms ($(((n + per_topic * batch - 1) / (per_topic * batch))) CreateTopics requests; $answered); idle RSS $(rss_mib "$pid") MiB, $(fds "$pid") open files"
	# The first clean stop after the creation writes every partition's
	# files once: its time, and what it charged to the memory cgroup.
	if [[ -n "$cg" ]]; then
		echo 0 >"$cg/memory.max_usage_in_bytes"
		echo 0 >"$cg/memory.kmem.max_usage_in_bytes" 2>/dev/null || true
		failcnt0=$(cat "$cg/memory.failcnt")
	fi
	t0=$(date +%s%N)
	stop_broker TERM
	stop_line="  first clean stop: $((($(date +%s%N) - t0) / 1000000)) ms"
	if [[ -n "$cg" ]]; then
		stop_line+="; memory cgroup during it: peak $(awk '{ printf "%.1f", $1 / 1048576 }' "$cg/memory.max_usage_in_bytes") MiB, kernel memory peak $(awk '{ printf "%.1f", $1 / 1048576 }' "$cg/memory.kmem.max_usage_in_bytes" 2>/dev/null || echo "?") MiB, $(($(cat "$cg/memory.failcnt") - failcnt0)) charges over the limit (reclaims)"
	fi
	echo "$stop_line"
	for how in TERM KILL; do
		label="clean stop"
		[[ "$how" == KILL ]] && label="SIGKILL"
		firsts=() readies=()
		for _ in $(seq 1 "$runs"); do
			if ! start_timed "$wren" serve --config "$work/wren-$n.toml"; then
				echo "  restart after $label: FAILED: $(tail -c 300 "$work/serve.log")"
				continue 2
			fi
			firsts+=("$first_ms")
			readies+=("$ready_ms")
			rss=$(rss_mib "$pid")
			stop_broker "$how"
		done
		echo "  restart after $label: first connection $(median "${firsts[@]}") ms, all partitions ready: ${readies[*]} (first connections ${firsts[*]} ms); RSS after start $rss MiB"
	done
	if [[ -n "$cg" ]]; then
		echo "  memory cgroup peak $(awk '{ printf "%.1f", $1 / 1048576 }' "$cg/memory.max_usage_in_bytes") MiB (page cache included), $(awk '/^oom_kill / { print "OOM kills " $2 }' "$cg/memory.oom_control")"
	fi
	[[ "${WREN_KEEP:-}" == 1 ]] || rm -rf "$data"

	if [[ "${WREN_KAFKA:-}" == 1 ]]; then
		kafka_work="$work/kafka-$n"
		t0=$(date +%s%N)
		bs=$("$here/kafka-run.sh" start "$kafka_work")
		echo "kafka $n partitions: fresh start $((($(date +%s%N) - t0) / 1000000)) ms"
		t0=$(date +%s%N)
		create_topics "$bs" scale "$n"
		while (($("$wren" offsets -b "$bs" 2>/dev/null | grep -c '^scale[0-9]*:[0-9]*:[0-9]*$' || true) < n)); do sleep 0.5; done
		kpid=$(cat "$kafka_work/kafka.pid")
		sleep 3
		echo "  created in $((($(date +%s%N) - t0) / 1000000)) ms; idle RSS $(rss_mib "$kpid") MiB, $(fds "$kpid") open files"
		"$here/kafka-run.sh" stop "$kafka_work" >/dev/null
		t0=$(date +%s%N)
		bs=$("$here/kafka-run.sh" start "$kafka_work")
		first=$((($(date +%s%N) - t0) / 1000000))
		while (($("$wren" offsets -b "$bs" 2>/dev/null | grep -c '^scale[0-9]*:[0-9]*:[0-9]*$' || true) < n)); do sleep 0.1; done
		echo "  restart after clean stop: listener up $first ms (kafka-run.sh start), all partitions ready $((($(date +%s%N) - t0) / 1000000)) ms; RSS $(rss_mib "$(cat "$kafka_work/kafka.pid")") MiB"
		"$here/kafka-run.sh" stop "$kafka_work" >/dev/null
		kafka_work=""
		[[ "${WREN_KEEP:-}" == 1 ]] || rm -rf "$work/kafka-$n"
	fi
done
