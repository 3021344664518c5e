#!/usr/bin/env bash
# interop-groups.sh: consumer groups with clients nobody here wrote. kcat
# (librdkafka) with -G, confluent-kafka and kafka-python group consumers
# each read a topic through a group, commit, and a second run of the same
# group resumes at the committed offsets (reads nothing new). Apache
# Kafka's Java client does the same with the classic protocol and with
# KIP-848 (group.protocol=consumer), two members side by side sharing the
# partitions the broker assigns them.
# Needs what scripts/interop.sh installs (kcat, python3-confluent-kafka,
# python3-kafka, Maven and a JDK); run it after that script.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
passed=0 failed=0
check() { # label got want
	if [[ "$2" == "$3" ]]; then echo "ok   $1 ($2)"; passed=$((passed + 1)); else echo "FAIL $1: got $2, want $3"; failed=$((failed + 1)); fi
}
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

(cd "$root" && go build -o "$work/wren" .)
port=$(free_port); cport=$(free_port)
cat >"$work/wren.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$work/data"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[groups]
group.initial.rebalance.delay.ms = 0
group.consumer.heartbeat.interval.ms = 500
group.consumer.min.heartbeat.interval.ms = 500
[http]
listen = ""
[logging]
level = "warn"
TOML
"$work/wren" serve --config "$work/wren.toml" &
pid=$!
b="127.0.0.1:$port"
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
"$work/wren" topic create groups-interop -p 3 -b "$b" >/dev/null
seq 1 3000 | "$work/wren" produce groups-interop -b "$b" 2>/dev/null

n=$(timeout 60 kcat -b "$b" -G kcat-group groups-interop -o beginning -e -q | wc -l)
check "kcat -G first run" "$n" 3000
n=$(timeout 60 kcat -b "$b" -G kcat-group groups-interop -e -q | wc -l)
check "kcat -G second run resumes" "$n" 0

py() { # client group
	/usr/bin/python3 - "$1" "$2" "$b" <<'PY'
import sys, time
client, group, bootstrap = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
if client == "confluent":
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["groups-interop"])
    idle = time.time() + 10
    while time.time() < idle:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        n += 1
        idle = time.time() + 5
    if n:
        c.commit(asynchronous=False)
    c.close()
else:
    from kafka import KafkaConsumer
    k = KafkaConsumer("groups-interop", bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=5000, enable_auto_commit=False)
    n = sum(1 for _ in k)
    if n:
        k.commit()
    k.close()
print(n)
PY
}
for client in confluent kafka-python; do
	check "$client group first run" "$(py "$client" "$client-group")" 3000
	check "$client group second run resumes" "$(py "$client" "$client-group")" 0
done

# Apache Kafka's Java client: classic, then KIP-848 with two members at once.
if mvn -q -B -f "$root/interop/java/pom.xml" -Dinterop.build.dir="$work/java" package >"$work/maven.log" 2>&1; then
	java_group() { timeout --kill-after=10 120 java -cp "$work/java/classes:$work/java/lib/*" wren.interop.Interop group "$b" groups-interop "$@" 90; }
	check "java classic group first run" "$(java_group java-classic classic)" 3000
	check "java classic group second run resumes" "$(java_group java-classic classic)" 0
	# Both members join an empty topic first, so the records produced next
	# are shared between them by the broker's assignment.
	"$work/wren" topic create groups-848 -p 4 -b "$b" >/dev/null
	java_848() { timeout --kill-after=10 120 java -cp "$work/java/classes:$work/java/lib/*" wren.interop.Interop group "$b" groups-848 java-848 consumer 90; }
	java_848 >"$work/m1" &
	m1=$!
	java_848 >"$work/m2" &
	m2=$!
	# Wait until the broker's assignment settled: both members own partitions.
	owners=0
	for _ in $(seq 1 120); do
		owners=$({ "$work/wren" group describe java-848 --members -b "$b" 2>/dev/null || true; } | awk 'NR>1 && $5>0 {n++} END {print n+0}')
		[[ "$owners" == 2 ]] && break
		sleep 0.5
	done
	check "java KIP-848 group, both members own partitions" "$owners" 2
	# Keyed, so the records spread over the partitions.
	seq 1 3000 | awk '{print $1 ":" $1}' | "$work/wren" produce groups-848 -K : -b "$b" 2>/dev/null
	wait "$m1" "$m2" || true
	echo "     java KIP-848 members read $(cat "$work/m1") and $(cat "$work/m2")"
	check "java KIP-848 group, two members read every record once" "$(($(cat "$work/m1") + $(cat "$work/m2")))" 3000
	check "java KIP-848 group, both members got records" "$([[ $(cat "$work/m1") -gt 0 && $(cat "$work/m2") -gt 0 ]] && echo yes || echo no)" yes
	check "java KIP-848 group second run resumes" "$(java_848)" 0
else
	echo "FAIL java client build:"
	tail -20 "$work/maven.log"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
