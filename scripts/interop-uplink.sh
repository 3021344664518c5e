#!/usr/bin/env bash
# interop-uplink.sh: the uplink against a real Apache Kafka broker, both ways, through faults.
#
# Starts one Apache Kafka broker in KRaft mode on free loopback ports (scripts/kafka-run.sh;
# scripts/kafka-fetch.sh fetches it), advertising the address of a fault proxy that the test
# runs, then runs broker's TestUplinkKafkaFarSide against it: an edge wren process forwards
# sensors.* to Kafka and pulls Kafka's site-7.commands.* while writers keep writing to both
# sides, through the link cut, requests and answers cut in the middle, answers swallowed, the
# edge SIGKILLed twice in a catch-up and Kafka restarted (kafka-run.sh restart); a checker
# reads each receiving side read_committed and finds every acknowledged record exactly once,
# in order, with key, headers, timestamp and the provenance header. The test's records are
# small; it takes one to two minutes, Kafka's two starts (about 15 s each) included.
#
# Kafka keeps every record (log.retention.ms=-1): the test's records carry timestamps older
# than Kafka's default retention of seven days.
#
# Usage: scripts/interop-uplink.sh       (needs go, java 17+, maven, python3)
#
# Prints the test's figures, then "ok   ..." or "FAIL ..." and "N passed, N failed"; exits
# non-zero on failure, keeping the work directory (Kafka's log, the test's output, whose
# failure shows the edge's uplink log lines). Kafka is stopped on exit, whatever the exit.
#
# Environment:
#   WREN_BIN              the wren binary the test runs as the edge (default: the test builds one)
#   WREN_INTEROP_KEEP     1: keep the work directory even when everything passed
#   WREN_KAFKA_VERSION, WREN_KAFKA_HOME, WREN_KAFKA_HEAP_OPTS   as for kafka-run.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
started=$SECONDS
for tool in go java mvn python3; do
	command -v "$tool" >/dev/null || { echo "interop-uplink: $tool not found" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/wren-interop-uplink.XXXXXX")"
kdir="$work/kafka"
finished=0
cleanup() {
	local rc=$?
	trap - EXIT
	"$root/scripts/kafka-run.sh" stop "$kdir" >/dev/null 2>&1 || true
	if [[ $finished == 0 ]]; then
		echo "FAIL interop-uplink.sh stopped early (exit status $rc)"
		echo "0 passed, 1 failed"
		rc=1
	fi
	if [[ $rc == 0 && ${WREN_INTEROP_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "interop-uplink: work directory kept: $work (Kafka's log: $kdir/server.log, the test's output: $work/test.log)"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

libs="$("$root/scripts/kafka-fetch.sh")"
version="$(basename "$(dirname "$libs")")"
# The port the proxy will listen on, which Kafka advertises: every client the far side tells
# where to go comes back through the proxy. The kernel picks it free; the test binds it.
proxy_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
boot="$("$root/scripts/kafka-run.sh" start "$kdir" "advertised.listeners=PLAINTEXT://127.0.0.1:$proxy_port" \
	log.retention.ms=-1)"
echo "interop-uplink: $version at $boot, advertising the proxy at 127.0.0.1:$proxy_port ($((SECONDS - started)) s to start)"

rc=0
(cd "$root" && WREN_UPLINK_KAFKA="$boot" WREN_UPLINK_KAFKA_PROXY="127.0.0.1:$proxy_port" WREN_UPLINK_KAFKA_DIR="$kdir" \
	WREN_TEST_BIN="${WREN_BIN:-}" go test -count=1 -v -timeout 10m -run '^TestUplinkKafkaFarSide$' ./broker/) >"$work/test.log" 2>&1 || rc=$?
grep -E 'uplink_kafka_test\.go:[0-9]+:' "$work/test.log" | sed 's/^ *//' || true
finished=1
if [[ $rc == 0 ]] && grep -q -- '--- PASS: TestUplinkKafkaFarSide' "$work/test.log"; then
	echo "ok   uplink with Apache Kafka ($version) as the far side, both ways, through faults: $(grep -o -- '--- PASS: TestUplinkKafkaFarSide ([^)]*)' "$work/test.log")"
	echo "interop-uplink: took $((SECONDS - started)) s"
	echo "1 passed, 0 failed"
	exit 0
fi
echo "FAIL uplink with Apache Kafka ($version) as the far side (go test exit status $rc)"
tail -n 60 "$work/test.log" | sed 's/^/     | /'
echo "interop-uplink: took $((SECONDS - started)) s"
echo "0 passed, 1 failed"
exit 1
