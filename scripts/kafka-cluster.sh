#!/usr/bin/env bash
# kafka-cluster.sh: run Apache Kafka as a three-node KRaft cluster on loopback (three processes,
# each both broker and controller, a static controller quorum of all three), as a reference for
# benchmarks of wren's replication. The single-node sibling is kafka-run.sh.
#
# Usage:
#   scripts/kafka-cluster.sh start WORKDIR [key=value ...]   format (first time) and start all three;
#                                                            prints the bootstrap list on stdout
#   scripts/kafka-cluster.sh stop WORKDIR                    clean shutdown of every node
#   scripts/kafka-cluster.sh bootstrap WORKDIR               print the bootstrap list
#   scripts/kafka-cluster.sh status WORKDIR                  exit 0 if all three run
#
# WORKDIR layout (created as needed): WORKDIR/nodeN/ for N in 1 2 3, each with data/ (log.dirs),
# metadata/ (metadata.log.dir), server.properties, server.log and kafka.pid; WORKDIR/ports holds
# each node's client and controller port, random free loopback ports picked at first start and
# kept for later starts of the same WORKDIR; WORKDIR/bootstrap the client addresses.
#
# Extra key=value arguments are appended to every node's server.properties (later keys win), e.g.
# log.flush.interval.messages=1 to make Kafka fsync every append. Topic defaults are those of a
# replicated cluster: default.replication.factor=3, min.insync.replicas=2.
#
# Environment:
#   WREN_KAFKA_VERSION, WREN_KAFKA_HOME   as for kafka-fetch.sh (this script calls it)
#   WREN_KAFKA_CLUSTER_ID                 cluster id for a fresh format (default: a random one)
#   WREN_KAFKA_HEAP_OPTS                  JVM heap flags per node (default: -Xms256m -Xmx512m)
#   WREN_KAFKA_START_TIMEOUT              seconds to wait for the cluster to start (default 120)
#   WREN_KAFKA_STOP_TIMEOUT               seconds to wait for each clean shutdown (default 60)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nodes=(1 2 3)

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

[[ $# -ge 2 ]] || usage
cmd="$1"
work="$2"
shift 2

pid_of() { # node: prints the pid and succeeds if the node runs
	local f="$work/node$1/kafka.pid"
	[[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

java_cmd() {
	local home="$1"
	shift
	java -cp "$home/libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" "$@"
}

# ports: "client controller" for each node, one line per node, picked once per WORKDIR. Six
# distinct ports: the kernel hands out a fresh one per bind, and a duplicate is picked again.
ports() {
	if [[ ! -f "$work/ports" ]]; then
		local picked=() p
		while ((${#picked[@]} < 6)); do
			p="$(free_port)"
			[[ " ${picked[*]} " == *" $p "* ]] || picked+=("$p")
		done
		printf '%s %s\n' "${picked[0]}" "${picked[1]}" "${picked[2]}" "${picked[3]}" "${picked[4]}" "${picked[5]}" >"$work/ports"
	fi
	cat "$work/ports"
}

client_port() { sed -n "${1}p" "$work/ports" | cut -d' ' -f1; }
controller_port() { sed -n "${1}p" "$work/ports" | cut -d' ' -f2; }

bootstrap() {
	local out="" n
	for n in "${nodes[@]}"; do out+="${out:+,}127.0.0.1:$(client_port "$n")"; done
	echo "$out"
}

start() {
	if status; then
		bootstrap
		return 0
	fi
	local libs home
	libs="$("$here/kafka-fetch.sh")"
	home="$(dirname "$libs")"
	mkdir -p "$work"
	work="$(cd "$work" && pwd)"
	ports >/dev/null
	local voters="" n
	for n in "${nodes[@]}"; do voters+="${voters:+,}$n@127.0.0.1:$(controller_port "$n")"; done

	local cluster_id="${WREN_KAFKA_CLUSTER_ID:-}"
	if [[ -f "$work/cluster-id" ]]; then
		cluster_id="$(cat "$work/cluster-id")"
	elif [[ -z "$cluster_id" ]]; then
		cluster_id="$(java_cmd "$home" kafka.tools.StorageTool random-uuid)"
	fi
	echo "$cluster_id" >"$work/cluster-id"

	for n in "${nodes[@]}"; do
		local dir="$work/node$n"
		mkdir -p "$dir/data" "$dir/metadata"
		cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(client_port "$n"),CONTROLLER://127.0.0.1:$(controller_port "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
metadata.log.dir=$dir/metadata
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
		local kv
		for kv in "$@"; do
			if [[ "$kv" != *=* ]]; then
				echo "kafka-cluster: extra argument $kv is not key=value" >&2
				exit 2
			fi
			echo "$kv" >>"$dir/server.properties"
		done
		if [[ ! -f "$dir/metadata/meta.properties" ]]; then
			java_cmd "$home" kafka.tools.StorageTool format --cluster-id "$cluster_id" \
				--config "$dir/server.properties" >"$dir/format.log" 2>&1 || {
				cat "$dir/format.log" >&2
				echo "kafka-cluster: storage format of node $n failed" >&2
				exit 1
			}
		fi
	done

	# All three start before any is waited for: a controller quorum of three elects a leader
	# only once two of them run. setsid: the brokers outlive this script and not receive the
	# caller's terminal signals.
	for n in "${nodes[@]}"; do
		local dir="$work/node$n"
		if pid_of "$n" >/dev/null; then continue; fi
		# shellcheck disable=SC2086
		setsid java ${WREN_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} -XX:+UseG1GC -Djava.awt.headless=true \
			-cp "$home/libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" \
			kafka.Kafka "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null &
		echo $! >"$dir/kafka.pid"
	done

	local deadline=$((SECONDS + ${WREN_KAFKA_START_TIMEOUT:-120}))
	for n in "${nodes[@]}"; do
		local dir="$work/node$n"
		until grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null &&
			(exec 3<>"/dev/tcp/127.0.0.1/$(client_port "$n")") 2>/dev/null; do
			if ! pid_of "$n" >/dev/null; then
				tail -n 40 "$dir/server.log" >&2 || true
				echo "kafka-cluster: node $n exited during start; stopping the others" >&2
				stop || true
				exit 1
			fi
			if ((SECONDS >= deadline)); then
				tail -n 40 "$dir/server.log" >&2 || true
				echo "kafka-cluster: node $n did not start within ${WREN_KAFKA_START_TIMEOUT:-120}s; stopping all" >&2
				stop || true
				exit 1
			fi
			sleep 0.2
		done
	done
	bootstrap >"$work/bootstrap"
	cat "$work/bootstrap"
}

# stop sends SIGTERM (Kafka's controlled shutdown) to every node at once and waits for each; a
# node still running past the deadline is killed, and that is said.
stop() {
	local n pid rc=0
	for n in "${nodes[@]}"; do
		if pid="$(pid_of "$n")"; then kill -TERM "$pid"; fi
	done
	local deadline=$((SECONDS + ${WREN_KAFKA_STOP_TIMEOUT:-60}))
	for n in "${nodes[@]}"; do
		pid="$(cat "$work/node$n/kafka.pid" 2>/dev/null)" || continue
		while kill -0 "$pid" 2>/dev/null; do
			if ((SECONDS >= deadline)); then
				kill -KILL "$pid" 2>/dev/null || true
				echo "kafka-cluster: node $n did not stop within ${WREN_KAFKA_STOP_TIMEOUT:-60}s; killed (unclean)" >&2
				rc=1
				break
			fi
			sleep 0.2
		done
		rm -f "$work/node$n/kafka.pid"
	done
	return "$rc"
}

status() {
	local n
	for n in "${nodes[@]}"; do pid_of "$n" >/dev/null || return 1; done
}

case "$cmd" in
start) start "$@" ;;
stop) stop ;;
bootstrap) cat "$work/bootstrap" ;;
status) status ;;
*) usage ;;
esac
