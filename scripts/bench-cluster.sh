#!/usr/bin/env bash
# bench-cluster.sh: the replication benchmark. The same produce load (1 KiB records, acks=all,
# one producer, a fixed record count) against, in turn and never two at once:
#
#   wren-1        one wren node, topic of P partitions, replication factor 1
#   wren-3        three wren nodes, P partitions, replication factor 3, min.insync.replicas=2
#   kafka-3       three Apache Kafka 4.x nodes (KRaft, each broker and controller), same topic;
#                 Kafka's default durability: no fsync per append (the page cache), while wren
#                 fdatasyncs on every ISR member before it acknowledges
#   kafka-3-fsync the same with log.flush.interval.messages=1: Kafka fsyncs every append, the
#                 like-for-like durability comparison
#
# each driven by two clients with the same batch and linger settings: `wren perf produce`
# (franz-go) and Kafka's own kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance,
# the Java client). Every system starts from empty directories on random free loopback ports
# and is stopped before the next starts. The rounds interleave the systems, so slow spells of a
# shared machine spread over all of them; every run is printed, then per system and client the
# mean and the spread (min..max) of the rounds, then the ratios.
#
# After each client's run on wren, each node's /metrics says where a produce's time went there
# (produce_figures: read to answer, queued behind earlier answers, leader append to durable, durable
# to the ISR holding it, follower appends, expired follower fetches, failed fetch rounds), read
# once the client is done so that the run measures the same.
#
# Usage: scripts/bench-cluster.sh [NUM_RECORDS]   (default 1500000: 1.4 GiB a run, on every replica)
#
# Fixed-rate mode (WREN_BENCH_RATE=records/s): what a producer at its own steady rate feels, the
# latency tail rather than the throughput at saturation. Both clients aim at that rate
# (--throughput), linger defaults to 1 ms, NUM_RECORDS defaults to WREN_BENCH_SECONDS of the
# rate, the systems default to "wren-3 kafka-3 kafka-3-fsync", and the summary gives per system
# and client the median and spread (min..max) over the rounds of the achieved rate and of the
# p50, p99, p99.9 and max latencies, side by side. A run that fell short of the rate says so:
# its latencies then include the queue of records it could not send in time.
#
# Environment:
#   WREN_BENCH_RATE         records/s for the fixed-rate mode (default: unlimited, the throughput mode)
#   WREN_BENCH_SECONDS      seconds a fixed-rate run lasts when NUM_RECORDS is not given (default 30)
#   WREN_BENCH_ROUNDS       rounds over all systems (default 2)
#   WREN_BENCH_SYSTEMS      which systems, space-separated (default "wren-1 wren-3 kafka-3 kafka-3-fsync")
#   WREN_BENCH_CLIENTS      which clients (default "wren-perf kafka-perf")
#   WREN_BENCH_PARTITIONS   partitions of the topic (default 6)
#   WREN_BENCH_BATCH_BYTES  the producers' batch size (default 1000012, franz-go's default)
#   WREN_BENCH_LINGER_MS    the producers' linger (default 10, franz-go's default)
#   WREN_BENCH_KEEP_LOGS    a directory to copy every node's log into before it is removed
#   WREN_BENCH_WREN_TOML    extra TOML for every wren node, e.g. $'[replication]\nreplica.fetch.max.bytes = 4194304'
#   WREN_BIN                a wren binary to measure instead of building one (a profiling build)
#   WREN_BENCH_NODE_CPU     cores each broker node may use, e.g. 0.4 (cgroup v1 cpu quota; root):
#                           each node gets a small host's CPU of its own, as three edge hosts
#                           would, instead of three nodes and the client sharing one machine's
#                           cores (there RF 3 triples the disk writes on the same CPU, so the
#                           three-node figure measures the host, not replication). Kafka nodes
#                           get the same cap. The client is never capped.
#   WREN_KAFKA_HEAP_OPTS    each Kafka node's heap (default -Xms256m -Xmx512m)
#   WREN_KAFKA_STOP_TIMEOUT seconds a Kafka node may take to stop before it is killed (default 20)
# Needs: go, python3; java 17 and mvn for Kafka and its perf tool (scripts/kafka-fetch.sh).
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rate="${WREN_BENCH_RATE:--1}"
if ! [[ "$rate" =~ ^(-1|[1-9][0-9]*)$ ]]; then
	echo "bench: WREN_BENCH_RATE=$rate is not a whole number of records/s" >&2
	exit 2
fi
if ((rate > 0)); then
	seconds="${WREN_BENCH_SECONDS:-30}"
	n="${1:-$((rate * seconds))}"
	systems="${WREN_BENCH_SYSTEMS:-wren-3 kafka-3 kafka-3-fsync}"
	linger_ms="${WREN_BENCH_LINGER_MS:-1}"
else
	n="${1:-1500000}"
	systems="${WREN_BENCH_SYSTEMS:-wren-1 wren-3 kafka-3 kafka-3-fsync}"
	linger_ms="${WREN_BENCH_LINGER_MS:-10}"
fi
rounds="${WREN_BENCH_ROUNDS:-2}"
clients="${WREN_BENCH_CLIENTS:-wren-perf kafka-perf}"
partitions="${WREN_BENCH_PARTITIONS:-6}"
batch_bytes="${WREN_BENCH_BATCH_BYTES:-1000012}"
record_bytes=1024
export WREN_KAFKA_HEAP_OPTS="${WREN_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
export WREN_KAFKA_STOP_TIMEOUT="${WREN_KAFKA_STOP_TIMEOUT:-20}"

node_cpu="${WREN_BENCH_NODE_CPU:-}"
cgroot=/sys/fs/cgroup/cpu
if [[ -n "$node_cpu" ]]; then
	if ! [[ "$node_cpu" =~ ^[0-9]+(\.[0-9]+)?$ ]] || [[ ! -w "$cgroot" ]]; then
		echo "bench: WREN_BENCH_NODE_CPU=$node_cpu needs a number of cores and a writable cgroup v1 cpu controller at $cgroot (root)" >&2
		exit 2
	fi
fi

work="$(mktemp -d)"
wren_pids=()
kafka_dir=""
cgroups=()
cleanup() {
	local p g
	if [[ -n "${client_pid:-}" ]]; then kill "$client_pid" 2>/dev/null || true; fi
	for p in "${wren_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${wren_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n "$kafka_dir" ]]; then "$here/kafka-cluster.sh" stop "$kafka_dir" >/dev/null 2>&1 || true; fi
	for g in "${cgroups[@]}"; do rmdir "$g" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "bench: $*" >&2; }

# cap_cpu moves a node's process into a cgroup of its own with WREN_BENCH_NODE_CPU cores.
cap_cpu() { # name pid
	[[ -n "$node_cpu" ]] || return 0
	local g="$cgroot/wren-bench-$$-$1"
	mkdir -p "$g"
	cgroups+=("$g")
	awk -v c="$node_cpu" 'BEGIN { printf "%d\n", c * 100000 }' >"$g/cpu.cfs_quota_us"
	echo "$2" >"$g/cgroup.procs"
}

boot=""
if [[ -n "${WREN_BIN:-}" ]]; then
	wren="$WREN_BIN"
else
	wren="$work/bin/wren"
	mkdir -p "$work/bin"
	"$here/build.sh" "$wren"
fi
need_kafka=0
[[ " $systems $clients " == *" kafka"* ]] && need_kafka=1
if ((need_kafka)); then
	libs="$("$here/kafka-fetch.sh")"
	kafka_home="$(dirname "$libs")"
	kafka_version="$(basename "$(ls "$libs"/kafka-clients-*.jar)" .jar)"
	kafka_version="${kafka_version#kafka-clients-}"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready polls until every partition of topic has a live leader and a full ISR, so that no
# run pays for elections or followers catching up.
wait_ready() { # bootstrap topic
	local end=$((SECONDS + 60)) unavailable under
	while ((SECONDS < end)); do
		if unavailable=$("$wren" topic describe -b "$1" --unavailable-partitions "$2" 2>/dev/null) &&
			under=$("$wren" topic describe -b "$1" --under-replicated-partitions "$2" 2>/dev/null) &&
			[[ -z "$unavailable" && -z "$under" ]] &&
			"$wren" topic describe -b "$1" "$2" 2>/dev/null | grep -q 'Leader: [0-9]'; then
			return 0
		fi
		sleep 0.2
	done
	say "topic $2 on $1 is not ready within 60 s:"
	"$wren" topic describe -b "$1" "$2" >&2 || true
	return 1
}

# create_topic creates topic, trying again while the cluster refuses it for a while: a node
# listed in the metadata may not have registered with the controller yet, and then a replication
# factor of 3 is refused.
create_topic() { # bootstrap topic replication_factor min_insync_replicas
	local end=$((SECONDS + 60))
	until "$wren" topic create -b "$1" "$2" -p "$partitions" -r "$3" -c min.insync.replicas="$4" \
		--if-not-exists >/dev/null 2>"$work/create.err"; do
		if ((SECONDS >= end)); then
			say "cannot create topic $2 on $1 within 60 s:"
			cat "$work/create.err" >&2
			return 1
		fi
		sleep 0.2
	done
}

# wait_brokers polls until the cluster at bootstrap lists count brokers and is healthy.
wait_brokers() { # bootstrap count
	local end=$((SECONDS + 60))
	while ((SECONDS < end)); do
		if [[ "$("$wren" cluster info -b "$1" 2>/dev/null | grep -cE '^[0-9]+\*? +127\.0\.0\.1')" -eq "$2" ]] &&
			"$wren" cluster health -b "$1" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	say "the cluster at $1 does not list $2 healthy brokers within 60 s"
	"$wren" cluster health -b "$1" >&2 || true
	return 1
}

# start_wren writes one cluster file for count nodes on free loopback ports and starts them;
# it sets boot to the bootstrap list. (Not called in a command substitution: the pids must
# reach this shell's cleanup.)
start_wren() { # count
	local count=$1 dir="$work/wren" voters="" i
	boot=""
	local -a cport pport
	hports=()
	mkdir -p "$dir"
	for ((i = 1; i <= count; i++)); do
		cport[i]=$(free_port)
		pport[i]=$(free_port)
		voters+="${voters:+, }\"$i@127.0.0.1:${pport[i]}\""
		boot+="${boot:+,}127.0.0.1:${cport[i]}"
	done
	{
		printf '[cluster]\ncontroller.quorum.voters = [%s]\n' "$voters"
		printf '[logging]\nlevel = "warn"\n'
		[[ -n "${WREN_BENCH_WREN_TOML:-}" ]] && printf '%s\n' "$WREN_BENCH_WREN_TOML"
		for ((i = 1; i <= count; i++)); do
			printf '\n[node.%d.broker]\nlog.dirs = ["%s"]\n' "$i" "$dir/data$i"
			printf 'listeners = ["PLAINTEXT://127.0.0.1:%s", "CONTROLLER://127.0.0.1:%s"]\n' "${cport[i]}" "${pport[i]}"
			hports[i]=$(free_port)
			printf '[node.%d.http]\nlisten = "127.0.0.1:%s"\n' "$i" "${hports[i]}"
		done
	} >"$dir/cluster.toml"
	for ((i = 1; i <= count; i++)); do
		"$wren" serve --config "$dir/cluster.toml" --node-id "$i" >"$dir/node$i.log" 2>&1 &
		wren_pids+=("$!")
		cap_cpu "wren-$i" "$!"
	done
	wait_brokers "$boot" "$count" >&2
}

# runtime_figures prints, in the fixed-rate mode, each wren node's figures since it started (its
# /metrics): how long a Produce took from reading it to writing its answer (the broker's share of
# the client's latency; the rest is the client and the wire), its fdatasyncs, how long goroutines
# waited runnable before they ran (the Go scheduler's share), the GC's stop-the-world pauses, and
# CPU. Bucket bounds, so "<=".
hports=()
runtime_figures() { # label
	((rate > 0)) || return 0
	local i
	for i in "${!hports[@]}"; do
		curl -s --max-time 5 "http://127.0.0.1:${hports[i]}/metrics" | awk -v label="$1" -v node="$i" '
			function q(name, f,   k, le) {
				for (k = 1; k <= nb[name]; k++) if (cnt[name, k] >= f * tot[name]) return le_[name, k] * 1000
				return -1
			}
			/^go_sched_latencies_seconds_bucket|^go_gc_pauses_seconds_bucket|^wren_kafka_request_latency_seconds_bucket\{request="Produce"|^wren_storage_fdatasync_latency_seconds_bucket/ {
				split($1, a, "_bucket"); name = a[1]
				le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
				if (le == "+Inf") { tot[name] = $2; next }
				k = ++nb[name]; le_[name, k] = le; cnt[name, k] = $2
			}
			/^go_gc_cpu_seconds_total / { gc = $2 }
			/^process_cpu_seconds_total / { cpu = $2 }
			END {
				p = "wren_kafka_request_latency_seconds"; f = "wren_storage_fdatasync_latency_seconds"
				printf "   %s node %s: Produce read to answer p99 <= %.3g ms, p99.9 <= %.3g ms (%d requests); fdatasync p99 <= %.3g ms; runnable before running p99 <= %.2g ms, p99.9 <= %.2g ms; GC pauses %d, p99 <= %.2g ms; CPU %.1f s (GC %.1f s)\n", label, node,
					q(p, 0.99), q(p, 0.999), tot[p], q(f, 0.99),
					q("go_sched_latencies_seconds", 0.99), q("go_sched_latencies_seconds", 0.999),
					tot["go_gc_pauses_seconds"], q("go_gc_pauses_seconds", 0.99), cpu, gc
			}' || true
	done
}

# produce_figures prints each wren node's figures since it started (its /metrics) of where an
# acks=all produce's time went, in both modes: a Produce from reading it to writing its answer
# (handled) and behind earlier answers on its connection (queued); the leader's append to durable;
# durable to the ISR holding it; a follower's append; and the follower fetches a leader held to
# the end of their wait (expired) and this node's failed fetch rounds. Read after the client is
# done, so the run measures the same as without. Bucket bounds, so "<=".
produce_figures() { # label
	local i
	for i in "${!hports[@]}"; do
		curl -s --max-time 5 "http://127.0.0.1:${hports[i]}/metrics" | awk -v label="$1" -v node="$i" '
			function q(name, f,   k) {
				for (k = 1; k <= nb[name]; k++) if (cnt[name, k] >= f * tot[name]) return le_[name, k] * 1000
				return -1
			}
			function h(title, name) {
				if (!(name in tot)) return ""
				return sprintf("; %s p99 <= %.3g ms, p99.9 <= %.3g ms (%d)", title, q(name, 0.99), q(name, 0.999), tot[name])
			}
			/^wren_kafka_produce_(handled|queued)_seconds_bucket|^wren_replication_(leader_durable|acks_all_isr_wait|follower_append)_seconds_bucket/ {
				split($1, a, "_bucket"); name = a[1]
				le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
				if (le == "+Inf") { tot[name] = $2; next }
				k = ++nb[name]; le_[name, k] = le; cnt[name, k] = $2
			}
			/^wren_replication_follower_fetch_expired_total / { expired = $2 }
			/^wren_replication_follower_fetch_failures_total / { failures = $2 }
			END {
				line = h("Produce handled", "wren_kafka_produce_handled_seconds") h("queued", "wren_kafka_produce_queued_seconds") \
					h("leader durable", "wren_replication_leader_durable_seconds") h("ISR wait", "wren_replication_acks_all_isr_wait_seconds") \
					h("follower append", "wren_replication_follower_append_seconds")
				if (line == "") exit
				printf "   %s node %s: %s; follower fetches expired %d, fetch failures %d\n", label, node, substr(line, 3), expired, failures
			}' || true
	done
}

stop_wren() {
	local p
	for p in "${wren_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${wren_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	wren_pids=()
	keep_logs "$work/wren"/node*.log
	rm -rf "$work/wren"
}

start_kafka() { # extra server.properties lines...
	kafka_dir="$work/kafka"
	rm -rf "$kafka_dir"
	boot=$("$here/kafka-cluster.sh" start "$kafka_dir" "$@")
	local n
	for n in 1 2 3; do
		cap_cpu "kafka-$n" "$(cat "$kafka_dir/node$n/kafka.pid")"
	done
}

stop_kafka() {
	# A node that hangs in its shutdown (a KRaft quorum losing its majority as all three stop)
	# is killed by kafka-cluster.sh after WREN_KAFKA_STOP_TIMEOUT; its data goes anyway.
	"$here/kafka-cluster.sh" stop "$kafka_dir" >/dev/null || true
	keep_logs "$kafka_dir"/node*/server.log
	rm -rf "$kafka_dir"
	kafka_dir=""
}

keep_logs() {
	[[ -n "${WREN_BENCH_KEEP_LOGS:-}" ]] || return 0
	mkdir -p "$WREN_BENCH_KEEP_LOGS"
	local f
	for f in "$@"; do
		[[ -f "$f" ]] && cp "$f" "$WREN_BENCH_KEEP_LOGS/$(date +%H%M%S)-$(basename "$(dirname "$f")")-$(basename "$f")"
	done
}

# produce runs one client against bootstrap and prints its final perf-test line (the two tools
# print the same layout). The client runs in the background and is waited for, so that a signal
# to this script stops it at once (bash runs traps only between foreground commands).
client_pid=""
produce() { # client bootstrap topic
	case "$1" in
	wren-perf)
		"$wren" perf produce -b "$2" --topic "$3" --num-records "$n" \
			--record-size "$record_bytes" --throughput "$rate" --acks all --reporting-interval 1h \
			--producer-props "batch.size=$batch_bytes,linger.ms=$linger_ms" >"$work/client.out" 2>"$work/client.err" &
		;;
	kafka-perf)
		java -Xmx512m -cp "$kafka_home/libs/*" -Dlog4j2.configurationFile="$kafka_home/config/log4j2.yaml" \
			org.apache.kafka.tools.ProducerPerformance --topic "$3" --num-records "$n" \
			--record-size "$record_bytes" --throughput "$rate" \
			--producer-props bootstrap.servers="$2" acks=all enable.idempotence=true \
			batch.size="$batch_bytes" linger.ms="$linger_ms" >"$work/client.out" 2>"$work/client.err" &
		;;
	esac
	client_pid=$!
	local rc=0
	wait "$client_pid" || rc=$?
	client_pid=""
	tail -1 "$work/client.out"
	return "$rc"
}

results="$work/results"
: >"$results"

# run_system starts one system, runs every client once against a fresh topic, and stops it.
run_system() { # system round
	local sys=$1 round=$2 rf=3 minisr=2
	case "$sys" in
	wren-1) start_wren 1; rf=1 minisr=1 ;;
	wren-3) start_wren 3 ;;
	kafka-3) start_kafka ;;
	kafka-3-fsync) start_kafka log.flush.interval.messages=1 ;;
	*) say "unknown system $sys"; exit 2 ;;
	esac
	local client topic line
	for client in $clients; do
		topic="bench-$sys-$client-$round"
		create_topic "$boot" "$topic" "$rf" "$minisr"
		wait_ready "$boot" "$topic"
		if ((rate > 0)); then
			# A follower's fetcher takes a new partition into its fetches only once its
			# long poll of the others returns (replica.fetch.wait.max.ms, 500 ms, in both
			# systems): a run that starts at once measures that wait, up to twice, as a
			# start-up stall of about a second. The fixed-rate mode measures the steady state.
			sleep 1.5
		fi
		if ! line=$(produce "$client" "$boot" "$topic") || [[ "$line" != *"records sent"* ]]; then
			say "$client against $sys failed: $line"
			cat "$work/client.err" >&2
			exit 1
		fi
		# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
		# P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
		awk -v sys="$sys" -v client="$client" -v round="$round" '{
			gsub(/[(),]/, "")
			printf "%-14s %-11s %5s %12.0f %8.2f %8s %8s %8s %8s\n", sys, client, round, $4, $6, $16, $22, $25, $12
		}' <<<"$line" | tee -a "$results"
		if [[ "$sys" == wren-* ]]; then
			runtime_figures "after $client:"
			produce_figures "after $client:"
		fi
	done
	case "$sys" in
	wren-*) stop_wren ;;
	kafka-*) stop_kafka ;;
	esac
}

echo "== $n records of $record_bytes B, acks=all, one producer, $partitions partitions;" \
	"$( ((rate > 0)) && echo "at a fixed rate of $rate records/s;" || echo "as fast as it goes;")" \
	"batch $batch_bytes B, linger $linger_ms ms; $rounds rounds, systems interleaved"
echo "== wren $("$wren" version 2>/dev/null | head -1)${kafka_version:+; Apache Kafka $kafka_version (KRaft, 3 combined nodes, heap ${WREN_KAFKA_HEAP_OPTS})}"
echo "== wren fdatasyncs on every ISR member before acking (log.flush.policy=ack);" \
	"kafka-3 is Kafka's default (no fsync per append, page cache);" \
	"kafka-3-fsync sets log.flush.interval.messages=1 (fsync every append)"
echo "== $(nproc) cores${node_cpu:+, each broker node capped at $node_cpu cores}; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
printf '%-14s %-11s %5s %12s %8s %8s %8s %8s %8s\n' system client round records/s MB/s p50_ms p99_ms p999_ms max_ms
for ((round = 1; round <= rounds; round++)); do
	for sys in $systems; do
		run_system "$sys" "$round"
	done
done
echo "== load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"

if ((rate > 0)); then
	# The latency tail side by side: per system and client, the median of the rounds and their
	# spread. Columns of $results: 4 records/s, 6 p50, 7 p99, 8 p99.9, 9 max.
	echo
	echo "== latency at $rate records/s, per system and client over $rounds rounds: median [min..max] (ms)"
	printf '%-14s %-11s %-20s %-16s %-18s %-18s %-18s\n' system client records/s p50 p99 p99.9 max
	awk -v rate="$rate" '
		function stat(k, c,   n, i, j, t, v) {
			n = cnt[k]
			for (i = 1; i <= n; i++) v[i] = val[k, c, i]
			for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
			return sprintf("%g [%g..%g]", (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2, v[1], v[n])
		}
		{
			k = $1 " " $2
			if (!(k in cnt)) order[++nk] = k
			i = ++cnt[k]
			val[k, 4, i] = $4; val[k, 6, i] = $6; val[k, 7, i] = $7; val[k, 8, i] = $8; val[k, 9, i] = $9
			if ($4 < 0.98 * rate) short[k]++
		}
		END {
			for (i = 1; i <= nk; i++) {
				k = order[i]; split(k, f, " ")
				printf "%-14s %-11s %-20s %-16s %-18s %-18s %-18s%s\n", f[1], f[2], stat(k, 4), stat(k, 6), stat(k, 7), stat(k, 8), stat(k, 9),
					(k in short) ? sprintf("  (%d of %d runs below the rate)", short[k], cnt[k]) : ""
			}
		}' "$results"
	echo "== goal for wren-3: p99 < 20 ms and p99.9 < 50 ms at 10000 records/s, fsync before every ack"
	exit 0
fi

echo
echo "== per system and client over $rounds rounds: mean (min..max)"
printf '%-14s %-11s %24s %20s\n' system client MB/s p99_ms
awk '{
	k = $1 " " $2
	if (!(k in cnt)) order[++nk] = k
	cnt[k]++; mb[k] += $5; p99[k] += $7
	if (!(k in mbmin) || $5 < mbmin[k]) mbmin[k] = $5
	if (!(k in mbmax) || $5 > mbmax[k]) mbmax[k] = $5
	if (!(k in pmin) || $7 < pmin[k]) pmin[k] = $7
	if (!(k in pmax) || $7 > pmax[k]) pmax[k] = $7
}
END {
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, f, " ")
		printf "%-14s %-11s %7.2f (%6.2f..%6.2f) %6.0f (%4d..%4d)\n", f[1], f[2], mb[k]/cnt[k], mbmin[k], mbmax[k], p99[k]/cnt[k], pmin[k], pmax[k]
	}
}' "$results"

echo
echo "== throughput ratios: mean of the rounds' means, and each round's own ratio"
ratio() { # numerator denominator client
	awk -v a="$1" -v b="$2" -v c="$3" '
		$2 == c && $1 == a { na[$3] = $5; sa += $5; ca++ }
		$2 == c && $1 == b { nb[$3] = $5; sb += $5; cb++ }
		END {
			if (!ca || !cb) exit
			per = ""
			for (r in na) if (r in nb && nb[r] > 0) per = per sprintf(" r%s=%.2f", r, na[r] / nb[r])
			printf "%-14s / %-14s %-11s %5.2fx  (per round:%s)\n", a, b, c, (sa / ca) / (sb / cb), per
		}' "$results"
}
for client in $clients; do
	ratio wren-3 wren-1 "$client"
	ratio wren-3 kafka-3 "$client"
	ratio wren-3 kafka-3-fsync "$client"
	ratio wren-1 kafka-3 "$client"
done
echo "== target: wren-3 / wren-1 >= 0.60x"
