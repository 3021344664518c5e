#!/usr/bin/env bash
# kafka-run.sh: run Apache Kafka as a single-node KRaft cluster (one process that is both broker
# and controller) on loopback, as a reference broker for tests, benchmarks and golden data.
#
# Usage:
#   scripts/kafka-run.sh start WORKDIR [key=value ...]   format (first time) and start; prints the
#                                                        bootstrap address host:port on stdout
#   scripts/kafka-run.sh stop WORKDIR                    clean shutdown (SIGTERM, wait for exit)
#   scripts/kafka-run.sh restart WORKDIR                 stop, then start with the key=value
#                                                        arguments of the last start (kept in
#                                                        WORKDIR/extra.args); prints the bootstrap
#   scripts/kafka-run.sh bootstrap WORKDIR               print the bootstrap address
#   scripts/kafka-run.sh status WORKDIR                  exit 0 if running
#
# WORKDIR layout (created as needed):
#   WORKDIR/data/            log.dirs: partition directories and the checkpoint files
#   WORKDIR/metadata/        metadata.log.dir: the KRaft metadata log, kept apart so data/ holds
#                            only topic partitions
#   WORKDIR/server.properties, WORKDIR/server.log, WORKDIR/kafka.pid, WORKDIR/bootstrap
#
# Extra key=value arguments are appended to server.properties (later keys win), e.g.
# log.flush.interval.messages=1 to make Kafka fsync every append for a like-for-like benchmark.
# Ports are random free loopback ports picked at first start and kept for later starts of the
# same WORKDIR.
#
# Environment:
#   WREN_KAFKA_VERSION, WREN_KAFKA_HOME   as for kafka-fetch.sh (this script calls it)
#   WREN_KAFKA_CLUSTER_ID                 cluster id for a fresh format (default: a random one)
#   WREN_KAFKA_HEAP_OPTS                  JVM heap flags (default: -Xms256m -Xmx1g)
#   WREN_KAFKA_START_TIMEOUT              seconds to wait for the broker to start (default 90)
#   WREN_KAFKA_STOP_TIMEOUT               seconds to wait for a clean shutdown (default 60)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

[[ $# -ge 2 ]] || usage
cmd="$1"
work="$2"
shift 2

pidfile="$work/kafka.pid"

running() {
	[[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on. The kernel picks it (bind to
# port 0); a tiny race with other processes remains, which start detects as a failed start.
free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
		return
	fi
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	echo "kafka-run: no free port found" >&2
	return 1
}

# java_cmd runs one Kafka main class from the fetched classpath with the quiet logging config.
java_cmd() {
	local home="$1"
	shift
	java -cp "$home/libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" "$@"
}

start() {
	if running; then
		echo "kafka-run: already running (pid $(cat "$pidfile"))" >&2
		cat "$work/bootstrap"
		return 0
	fi
	local libs home
	libs="$("$here/kafka-fetch.sh")"
	home="$(dirname "$libs")"
	mkdir -p "$work/data" "$work/metadata"
	work="$(cd "$work" && pwd)"
	pidfile="$work/kafka.pid"

	local bport cport
	if [[ -f "$work/ports" ]]; then
		read -r bport cport <"$work/ports"
	else
		bport="$(free_port)"
		cport="$(free_port)"
		while [[ "$cport" == "$bport" ]]; do cport="$(free_port)"; done
		echo "$bport $cport" >"$work/ports"
	fi

	cat >"$work/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$bport,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$bport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$work/data
metadata.log.dir=$work/metadata
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
	local kv
	for kv in "$@"; do
		if [[ "$kv" != *=* ]]; then
			echo "kafka-run: extra argument $kv is not key=value" >&2
			exit 2
		fi
		echo "$kv" >>"$work/server.properties"
	done
	# restart starts again with these.
	if (($# > 0)); then printf '%s\n' "$@"; fi >"$work/extra.args"

	if [[ ! -f "$work/metadata/meta.properties" ]]; then
		local cluster_id="${WREN_KAFKA_CLUSTER_ID:-}"
		if [[ -z "$cluster_id" ]]; then
			cluster_id="$(java_cmd "$home" kafka.tools.StorageTool random-uuid)"
		fi
		java_cmd "$home" kafka.tools.StorageTool format --cluster-id "$cluster_id" \
			--config "$work/server.properties" >"$work/format.log" 2>&1 || {
			cat "$work/format.log" >&2
			echo "kafka-run: storage format failed" >&2
			exit 1
		}
	fi

	# setsid: the broker must outlive this script and not receive the caller's terminal signals.
	# shellcheck disable=SC2086
	setsid java ${WREN_KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} -XX:+UseG1GC -Djava.awt.headless=true \
		-cp "$home/libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" \
		kafka.Kafka "$work/server.properties" >"$work/server.log" 2>&1 </dev/null &
	echo $! >"$pidfile"

	# Started = the broker logged that it finished starting up and its client port accepts
	# connections. The log line comes from KafkaRaftServer, which the logging config keeps at INFO.
	local deadline=$((SECONDS + ${WREN_KAFKA_START_TIMEOUT:-90}))
	until grep -q "Kafka Server started" "$work/server.log" 2>/dev/null &&
		(exec 3<>"/dev/tcp/127.0.0.1/$bport") 2>/dev/null; do
		if ! running; then
			tail -n 40 "$work/server.log" >&2 || true
			echo "kafka-run: broker exited during start" >&2
			rm -f "$pidfile"
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			tail -n 40 "$work/server.log" >&2 || true
			echo "kafka-run: broker did not start within ${WREN_KAFKA_START_TIMEOUT:-90}s; stopping it" >&2
			stop || true
			exit 1
		fi
		sleep 0.2
	done
	echo "127.0.0.1:$bport" >"$work/bootstrap"
	echo "127.0.0.1:$bport"
}

stop() {
	if ! running; then
		rm -f "$pidfile"
		echo "kafka-run: not running" >&2
		return 0
	fi
	local pid
	pid="$(cat "$pidfile")"
	# SIGTERM triggers Kafka's clean shutdown: flush, write checkpoints and producer snapshots,
	# mark the log dirs clean. Only if that hangs past the deadline do we SIGKILL, and say so.
	kill -TERM "$pid"
	local deadline=$((SECONDS + ${WREN_KAFKA_STOP_TIMEOUT:-60}))
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$pidfile"
			echo "kafka-run: broker did not stop within ${WREN_KAFKA_STOP_TIMEOUT:-60}s; killed (unclean)" >&2
			return 1
		fi
		sleep 0.2
	done
	rm -f "$pidfile"
}

case "$cmd" in
start) start "$@" ;;
stop) stop ;;
restart)
	stop
	extra=()
	[[ ! -f "$work/extra.args" ]] || mapfile -t extra <"$work/extra.args"
	start "${extra[@]}"
	;;
bootstrap) cat "$work/bootstrap" ;;
status) running ;;
*) usage ;;
esac
