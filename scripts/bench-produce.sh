#!/usr/bin/env bash
# bench-produce.sh: the project's produce benchmark. Runs `wren perf
# produce` (1 KiB records, acks=all) against wren under flush policy ack and
# interval, and against Apache Kafka 4.x single node on the same machine
# (page-cache flushing, Kafka's default, and log.flush.interval.messages=1,
# which fsyncs every append like wren's ack), with 1 and 6 partitions each.
# Also prints wren's RSS idle and under load, and its time from start to the
# first accepted connection.
#
# Usage: scripts/bench-produce.sh [NUM_RECORDS]   (default 200000)
# Needs: go; java 17 and mvn for Kafka (scripts/kafka-fetch.sh). Set
# WREN_BENCH_SKIP_KAFKA=1 to measure wren alone.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
n="${1:-200000}"
work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -f "$work/kafka/kafka.pid" ]] && "$here/kafka-run.sh" stop "$work/kafka" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

wren="$work/wren"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$wren" .)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() { # host port deadline_s
	local end=$((SECONDS + $3))
	until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
		((SECONDS < end)) || { echo "bench: nothing listens on $1:$2" >&2; return 1; }
		sleep 0.01
	done
}

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

perf() { # label bootstrap partitions
	local out
	out=$("$wren" perf produce -b "$2" --topic "bench-$RANDOM" --num-records "$n" --record-size 1024 \
		--throughput -1 --acks all --partitions "$3" --reporting-interval 1h 2>/dev/null | tail -1)
	printf '%-34s p=%s  %s\n' "$1" "$3" "$out"
}

run_wren() { # policy
	local port cport dir
	port=$(free_port); cport=$(free_port); dir="$work/wren-$1"
	mkdir -p "$dir"
	cat >"$work/wren-$1.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$dir"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[storage]
log.flush.policy = "$1"
[logging]
level = "warn"
TOML
	local t0 t1
	t0=$(date +%s%N)
	"$wren" serve --config "$work/wren-$1.toml" &
	local pid=$!
	pids+=("$pid")
	wait_port 127.0.0.1 "$port" 10
	t1=$(date +%s%N)
	echo "wren ($1): first connection accepted $(( (t1 - t0) / 1000000 )) ms after start; idle RSS $(rss_kib "$pid") KiB"
	perf "wren log.flush.policy=$1" "127.0.0.1:$port" 1
	echo "  RSS after load: $(rss_kib "$pid") KiB"
	perf "wren log.flush.policy=$1" "127.0.0.1:$port" 6
	echo "  RSS after load: $(rss_kib "$pid") KiB"
	kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "== $n records of 1 KiB, acks=all, one producer (wren perf produce)"
run_wren ack
run_wren interval

if [[ "${WREN_BENCH_SKIP_KAFKA:-}" != 1 ]]; then
	for mode in pagecache fsync-each; do
		extra=()
		[[ $mode == fsync-each ]] && extra=(log.flush.interval.messages=1)
		rm -rf "$work/kafka"
		boot=$("$here/kafka-run.sh" start "$work/kafka" "${extra[@]}")
		kpid=$(cat "$work/kafka/kafka.pid")
		echo "kafka ($mode): idle RSS $(rss_kib "$kpid") KiB"
		perf "kafka 4.x $mode" "$boot" 1
		perf "kafka 4.x $mode" "$boot" 6
		echo "  RSS after load: $(rss_kib "$kpid") KiB"
		"$here/kafka-run.sh" stop "$work/kafka" >/dev/null
	done
fi
