#!/usr/bin/env bash
# interop-cluster.sh: Apache Kafka's own admin tools against a three-node wren cluster.
#
# Starts a local three-node cluster from one config file (scripts/local-cluster.sh, through
# scripts/interop-lib.sh; loopback, free ports) and checks, with Kafka's tool classes
# (scripts/kafka-fetch.sh fetches them):
#   - against EACH node: kafka-metadata-quorum describe --status and describe --replication
#     (MetadataQuorumCommand) and kcat -L: every node names the same LeaderId (the controller
#     kcat -L shows), the three voters are listed with their CONTROLLER endpoints, HighWatermark
#     is there, every follower's lag is small and none is negative, MaxFollowerLagTimeMs is
#     known and small, and every voter's LastFetchTimestamp and LastCaughtUpTimestamp is recent
#   - from a node that is NOT the controller (wren forwards what only the controller may do):
#     kafka-topics --create --replication-factor 3 and --describe; kafka-reassign-partitions
#     --execute then --verify for a small move (a replica moved to the third node, with data,
#     and a reordered replica list); kafka-leader-election --election-type PREFERRED
#     --all-topic-partitions (which the reorder made needed); kafka-configs --alter and
#     --describe of a topic
#
# Usage: scripts/interop-cluster.sh     (needs java 17+, maven and kcat; run after interop.sh,
#                                        which installs them)
#
# Prints one line per check, "ok   ..." or "FAIL ...", then "N passed, N failed"; exits non-zero
# if any check failed. On failure the tool's output follows the FAIL line and the work
# directory (configs, node logs, tool outputs) is kept. Every process it started is stopped on
# exit, whatever the exit.
#
# Environment:
#   WREN_BIN                   the wren binary (default: built from this checkout)
#   WREN_INTEROP_TIMEOUT       seconds one tool command may take (default 120)
#   WREN_INTEROP_KEEP          1: keep the work directory even when everything passed
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool_timeout="${WREN_INTEROP_TIMEOUT:-120}"

# shellcheck source=scripts/interop-lib.sh
source "$root/scripts/interop-lib.sh"
interop_init interop-cluster

for tool in java mvn kcat /usr/bin/python3; do
	command -v "$tool" >/dev/null || { echo "interop-cluster: $tool not found (scripts/interop.sh installs what is needed)" >&2; exit 2; }
done
libs="$("$root/scripts/kafka-fetch.sh")"
home="$(dirname "$libs")"

if [[ -n "${WREN_BIN:-}" ]]; then
	wren=$WREN_BIN
else
	build_wren
fi

start_cluster
addr() { node_addr "$1"; }
# metric NODE NAME: a sample of the node's /metrics (through Python's urllib: curl is not on
# every machine this runs on).
metric() {
	/usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
		"http://127.0.0.1:$((base_port + 10 * $1 + 2))/metrics" 2>/dev/null | awk -v m="$2" '$1 == m { print $2; exit }'
}
echo "interop-cluster: work directory $work"

# Settled: every node names the same controller and sees three brokers, none down. The first
# election waits for the election timeout.
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
		fail "the cluster did not settle within 60 s (controllers: $ctrls; brokers/down: $brokers)"
		interop_finish || exit 1
	fi
	sleep 0.5
done
controller=$c1
other=$((controller % 3 + 1)) # a node that is not the controller
ok "cluster settled: node $controller is the controller on every node"

# kafka TOOLCLASS ARGS...: one of Kafka's tools, bounded in time.
kafka() {
	timeout --kill-after=10 "$tool_timeout" java -cp "$libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" "$@"
}
MetadataQuorum=org.apache.kafka.tools.MetadataQuorumCommand
Topics=org.apache.kafka.tools.TopicCommand
LeaderElection=org.apache.kafka.tools.LeaderElectionCommand
Reassign=org.apache.kafka.tools.reassign.ReassignPartitionsCommand
Configs=kafka.admin.ConfigCommand

# maxLag bounds a follower's lag behind the controller's log end, in metadata log entries: the
# cluster is idle, so a follower is at most a fetch or two behind.
maxLag=20
# maxAgeMs bounds how old a voter's LastFetchTimestamp and LastCaughtUpTimestamp may be, and
# MaxFollowerLagTimeMs: an idle follower fetches again at least every fetch wait (the controller
# heartbeat interval), so its times are well under a second old; the bound leaves room for a
# loaded machine.
maxAgeMs=10000
# now_ms: this machine's wall clock in milliseconds, the controller's too (all nodes are local).
now_ms() { date +%s%3N; }

# ---- each node: kafka-metadata-quorum and kcat -L ---------------------------------------------

leaders=""
for n in 1 2 3; do
	log="$work/logs/quorum-status-$n.log"
	if ! kafka "$MetadataQuorum" --bootstrap-server "$(addr "$n")" describe --status >"$log" 2>&1; then
		fail "node $n: kafka-metadata-quorum describe --status" "$log"
	else
		field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$log"; }
		leader=$(field LeaderId) epoch=$(field LeaderEpoch) hw=$(field HighWatermark) lag=$(field MaxFollowerLag) voters=$(field CurrentVoters)
		lagMs=$(field MaxFollowerLagTimeMs)
		leaders+="$leader "
		voter_ids=$(grep -o '"id": [0-9]*' <<<"$voters" | awk '{print $2}' | sort -n | tr '\n' ' ' || true)
		# DescribeQuorum v2 names each voter's CONTROLLER endpoint (controller.quorum.voters).
		endpoints=$(grep -o 'CONTROLLER://[^"]*' <<<"$voters" | sort -u | grep -c . || true)
		if [[ "$leader" == "$controller" && "$epoch" =~ ^[0-9]+$ && "$hw" =~ ^[0-9]+$ && "$hw" -gt 0 &&
			"$lag" =~ ^[0-9]+$ && "$lag" -le $maxLag && "$voter_ids" == "1 2 3 " &&
			"$lagMs" =~ ^[0-9]+$ && "$lagMs" -le $maxAgeMs && "$endpoints" == 3 ]]; then
			ok "node $n: kafka-metadata-quorum describe --status: LeaderId $leader, LeaderEpoch $epoch, HighWatermark $hw, MaxFollowerLag $lag, MaxFollowerLagTimeMs $lagMs, voters ${voter_ids% } with $endpoints CONTROLLER endpoints"
		else
			fail "node $n: kafka-metadata-quorum describe --status: LeaderId '$leader' (want $controller), HighWatermark '$hw' (want > 0), MaxFollowerLag '$lag' (want 0-$maxLag), MaxFollowerLagTimeMs '$lagMs' (want 0-$maxAgeMs), voters '$voter_ids' (want 1 2 3), CONTROLLER endpoints $endpoints (want 3)" "$log"
		fi
	fi

	log="$work/logs/quorum-replication-$n.log"
	if ! kafka "$MetadataQuorum" --bootstrap-server "$(addr "$n")" describe --replication >"$log" 2>&1; then
		fail "node $n: kafka-metadata-quorum describe --replication" "$log"
	else
		# NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status. The
		# timestamps are the controller's wall clock in ms: recent, and not ahead of this clock.
		verdict=$(awk -v ctrl="$controller" -v max="$maxLag" -v now="$(now_ms)" -v maxAge="$maxAgeMs" '
			NR == 1 { next }
			NF >= 7 {
				rows++
				if ($7 == "Leader") { leaders++; if ($1 != ctrl) bad = bad " leader " $1 }
				else if ($7 == "Follower") { followers++ }
				else { bad = bad " status " $7 " of node " $1 }
				if ($3 !~ /^[0-9]+$/) bad = bad " node " $1 " LogEndOffset " $3
				if ($4 !~ /^[0-9]+$/ || $4 + 0 > max) bad = bad " node " $1 " Lag " $4
				for (i = 5; i <= 6; i++) {
					if ($i !~ /^[0-9]+$/ || now - $i > maxAge || $i - now > 1000) bad = bad " node " $1 " timestamp " $i " (now " now ")"
				}
				ids = ids " " $1 ":" $4 "/" (now - $5) "ms/" (now - $6) "ms"
			}
			END {
				if (rows != 3 || leaders != 1 || followers != 2) bad = bad " " rows " rows, " leaders " leader, " followers " followers"
				if (bad != "") print "bad:" bad; else print "node:lag/fetched/caught-up ago" ids
			}' "$log")
		if [[ $verdict == bad:* ]]; then
			fail "node $n: kafka-metadata-quorum describe --replication: ${verdict#bad:} (want leader $controller, two followers, lag 0-$maxLag, timestamps at most $maxAgeMs ms old)" "$log"
		else
			ok "node $n: kafka-metadata-quorum describe --replication: leader $controller, two followers ($verdict)"
		fi
	fi

	log="$work/logs/kcat-$n.log"
	if ! timeout "$tool_timeout" kcat -L -m 10 -b "$(addr "$n")" >"$log" 2>&1; then
		fail "node $n: kcat -L" "$log"
	else
		brokers=$(grep -c '^  broker ' "$log" || true)
		kctrl=$(grep '(controller)' "$log" | awk '{print $2}' || true)
		if [[ $brokers == 3 && $kctrl == "$controller" ]]; then
			ok "node $n: kcat -L lists 3 brokers, controller $kctrl"
		else
			fail "node $n: kcat -L lists $brokers brokers, controller '${kctrl}' (want 3 and $controller)" "$log"
		fi
	fi
done
if [[ $(tr ' ' '\n' <<<"$leaders" | grep -c .) == 3 && $(tr ' ' '\n' <<<"$leaders" | sort -u | grep -c .) == 1 ]]; then
	ok "every node answers kafka-metadata-quorum with the same LeaderId ($leaders)"
else
	fail "the nodes answer kafka-metadata-quorum with different or missing LeaderIds: '$leaders'"
fi

# ---- from a node that is not the controller -----------------------------------------------

b=$(addr "$other")
echo "interop-cluster: admin tools against node $other (not the controller) at $b"

# describe_topic TOPIC LOG: kafka-topics --describe, then "PARTITION LEADER REPLICAS ISR" per
# partition on stdout.
describe_topic() {
	kafka "$Topics" --bootstrap-server "$b" --describe --topic "$1" >"$2" 2>&1 || return 1
	awk '$1 == "Topic:" && $3 == "Partition:" {
		for (i = 1; i < NF; i++) f[$i] = $(i + 1)
		print f["Partition:"], f["Leader:"], f["Replicas:"], f["Isr:"]
	}' "$2"
}

# kafka-topics --create RF 3, then --describe: three replicas on three nodes, all in the ISR.
log="$work/logs/topics-create.log"
if kafka "$Topics" --bootstrap-server "$b" --create --topic interop-rf3 --partitions 3 --replication-factor 3 >"$log" 2>&1 &&
	grep -q 'Created topic interop-rf3' "$log"; then
	ok "kafka-topics --create --topic interop-rf3 --partitions 3 --replication-factor 3"
else
	fail "kafka-topics --create --topic interop-rf3 --partitions 3 --replication-factor 3" "$log"
fi
log="$work/logs/topics-describe.log"
# The ISR of a new partition fills as its followers first fetch: poll with a deadline.
deadline=$((SECONDS + 30))
while :; do
	parts=$(describe_topic interop-rf3 "$log" || true)
	good=$(awk '{ n = split($3, r, ","); m = split($4, s, ","); if (n == 3 && m == 3 && $2 == r[1]) g++ } END { print g + 0 }' <<<"$parts")
	[[ $good == 3 ]] && break
	((SECONDS >= deadline)) && break
	sleep 0.5
done
if [[ $good == 3 ]] && grep -q 'PartitionCount: 3.*ReplicationFactor: 3' "$log"; then
	ok "kafka-topics --describe interop-rf3: 3 partitions, 3 replicas each, full ISR, preferred leaders ($(tr '\n' ';' <<<"$parts"))"
else
	fail "kafka-topics --describe interop-rf3: want 3 partitions with 3 replicas, a full ISR and the preferred leader" "$log"
fi

# A small move: interop-move (RF 2, 1000 records) gets the node that did not hold it, in place
# of its leader; interop-rf3 partition 0 gets its first two replicas swapped, which keeps its
# leader but changes its preferred one (for the election below).
log="$work/logs/move-create.log"
if ! kafka "$Topics" --bootstrap-server "$b" --create --topic interop-move --partitions 1 --replication-factor 2 >"$log" 2>&1; then
	fail "kafka-topics --create --topic interop-move --replication-factor 2" "$log"
fi
seq 1 1000 | timeout "$tool_timeout" kcat -P -b "$b" -t interop-move -X acks=all >"$work/logs/move-produce.log" 2>&1 ||
	fail "kcat -P 1000 records to interop-move" "$work/logs/move-produce.log"
move_before=$(describe_topic interop-move "$work/logs/move-describe-before.log" | awk '$1 == 0 { print $3 }' || true)
rf3_before=$(awk '$1 == 0 { print $3 }' <<<"$parts")
if [[ ! "$move_before" =~ ^[1-3],[1-3]$ || ! "$rf3_before" =~ ^[1-3],[1-3],[1-3]$ ]]; then
	fail "no plan for the move: interop-move-0 replicas '$move_before', interop-rf3-0 replicas '$rf3_before'"
	interop_finish || exit 1
fi
IFS=, read -r m1 m2 <<<"$move_before"
third=$((6 - m1 - m2))
IFS=, read -r r1 r2 r3 <<<"$rf3_before"
cat >"$work/plan.json" <<JSON
{"version":1,"partitions":[
  {"topic":"interop-move","partition":0,"replicas":[$third,$m2]},
  {"topic":"interop-rf3","partition":0,"replicas":[$r2,$r1,$r3]}
]}
JSON
log="$work/logs/reassign-execute.log"
if kafka "$Reassign" --bootstrap-server "$b" --reassignment-json-file "$work/plan.json" --execute >"$log" 2>&1 &&
	grep -q 'Successfully started partition reassignments\? for' "$log"; then
	ok "kafka-reassign-partitions --execute: interop-move-0 $move_before -> $third,$m2, interop-rf3-0 $rf3_before -> $r2,$r1,$r3"
else
	fail "kafka-reassign-partitions --execute (interop-move-0 $move_before -> $third,$m2, interop-rf3-0 $rf3_before -> $r2,$r1,$r3)" "$log"
fi
log="$work/logs/reassign-verify.log"
deadline=$((SECONDS + 60))
verified=0
while ((SECONDS < deadline)); do
	if kafka "$Reassign" --bootstrap-server "$b" --reassignment-json-file "$work/plan.json" --verify >"$log" 2>&1 &&
		[[ $(grep -c 'Reassignment of partition .* is completed' "$log") == 2 ]]; then
		verified=1
		break
	fi
	grep -q 'still in progress' "$log" || break # an error, not a wait
	sleep 1
done
if [[ $verified == 1 ]]; then
	ok "kafka-reassign-partitions --verify: both reassignments completed, throttles cleared"
else
	fail "kafka-reassign-partitions --verify" "$log"
fi
move_after=$(describe_topic interop-move "$work/logs/move-describe-after.log" | awk '$1 == 0 { print $3 "/" $4 }' || true)
if [[ ${move_after%/*} == "$third,$m2" ]] && [[ $(tr ',' '\n' <<<"${move_after#*/}" | sort | tr '\n' ' ') == "$(printf '%s\n' "$third" "$m2" | sort | tr '\n' ' ')" ]]; then
	ok "kafka-topics --describe interop-move: replicas $third,$m2 and both in the ISR"
else
	fail "kafka-topics --describe interop-move: replicas/ISR '$move_after', want $third,$m2 and both in the ISR" "$work/logs/move-describe-after.log"
fi
got=$(timeout "$tool_timeout" kcat -C -b "$b" -t interop-move -o beginning -e -q 2>"$work/logs/move-consume.log" | wc -l || true)
if [[ $got == 1000 ]]; then
	ok "kcat -C reads back the 1000 records of interop-move from its new replicas"
else
	fail "kcat -C read $got records of interop-move, want 1000" "$work/logs/move-consume.log"
fi

# kafka-leader-election PREFERRED for every partition: interop-rf3-0's preferred leader is now
# $r2 while $r1 leads, so at least that one moves (the controller's own rebalancing may have
# moved it first: then the tool finds nothing to do).
log="$work/logs/leader-election.log"
if kafka "$LeaderElection" --bootstrap-server "$b" --election-type PREFERRED --all-topic-partitions >"$log" 2>&1; then
	ok "kafka-leader-election --election-type PREFERRED --all-topic-partitions ($(grep -Eo 'Successfully completed leader election \(PREFERRED\) for partitions|Valid replica already elected for partitions' "$log" | paste -sd ';' -))"
else
	fail "kafka-leader-election --election-type PREFERRED --all-topic-partitions" "$log"
fi
log="$work/logs/describe-after-election.log"
leaders_after=$(describe_topic interop-rf3 "$log" | awk '{ split($3, r, ","); printf "%s%s", sep, $1 ":" $2 "/" r[1]; sep = " " }' || true)
if [[ -n $leaders_after ]] && awk '{ for (i = 1; i <= NF; i++) { split($i, a, "[:/]"); if (a[2] != a[3]) exit 1 } }' <<<"$leaders_after" &&
	grep -q "interop-rf3-0" "$work/logs/leader-election.log"; then
	ok "every interop-rf3 partition led by its preferred replica after the election, interop-rf3-0 among those elected (partition:leader/preferred $leaders_after)"
else
	fail "after the preferred election: partition:leader/preferred '$leaders_after', and interop-rf3-0 must be among the partitions elected" "$log"
fi

# kafka-configs: set a topic config through a node that is not the controller, then describe it.
log="$work/logs/configs-alter.log"
if kafka "$Configs" --bootstrap-server "$b" --alter --entity-type topics --entity-name interop-rf3 --add-config retention.ms=3600000 >"$log" 2>&1 &&
	grep -q 'Completed updating config for topic interop-rf3' "$log"; then
	ok "kafka-configs --alter --add-config retention.ms=3600000 on interop-rf3"
else
	fail "kafka-configs --alter --add-config retention.ms=3600000 on interop-rf3" "$log"
fi
log="$work/logs/configs-describe.log"
if kafka "$Configs" --bootstrap-server "$b" --describe --entity-type topics --entity-name interop-rf3 >"$log" 2>&1 &&
	grep -q "Dynamic configs for topic interop-rf3 are:" "$log" &&
	grep -q "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" "$log"; then
	ok "kafka-configs --describe --entity-type topics --entity-name interop-rf3 shows retention.ms=3600000 as a dynamic topic config"
else
	fail "kafka-configs --describe of interop-rf3 does not show retention.ms=3600000 as DYNAMIC_TOPIC_CONFIG" "$log"
fi

interop_finish
