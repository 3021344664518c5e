#!/usr/bin/env bash
# interop-groups.sh: consumer groups with clients nobody here wrote. kcat (librdkafka) with -G,
# confluent-kafka and kafka-python group consumers each read a topic through a group and
# commit; a second run of the same group resumes at the committed offsets (reads the records
# produced since, and only those). Apache Kafka's Java client does the same with the classic
# protocol and with KIP-848 (group.protocol=consumer), two members side by side sharing the
# partitions the broker assigns them. Then Apache Kafka's own tools: the verifiable producer,
# the verifiable consumer with each group protocol (every acknowledged record read, as the
# acknowledgement said), kafka-consumer-groups --describe, --reset-offsets --to-earliest
# --execute (the console consumer then reads everything again) and --delete, and the console
# producer and consumer.
#
# It does so against each target in turn (scripts/interop-lib.sh): one node; a three-node
# cluster, topics with three replicas, where every group id is picked so that its coordinator
# (the leader of its __consumer_offsets partition) is neither the controller nor the node the
# clients bootstrap from, and FindCoordinator at the bootstrap node must name it; and the same
# cluster while the group's coordinator is SIGKILLed and restarted in the middle of the first
# run (half the records produced before, half while it is down): there every record must be
# read at least once over the two runs, and the idempotent producer (wren produce) must have
# written each exactly once. Kafka's tools run under faults too: the verifiable producer
# (throttled) and the console producer while a node that leads partitions is SIGKILLed, each
# verifiable consumer while its group's coordinator is.
#
# Usage: scripts/interop-groups.sh   (needs what scripts/interop.sh installs: kcat,
#                                     python3-confluent-kafka, python3-kafka, Maven and a JDK;
#                                     run it after that script; scripts/kafka-fetch.sh brings
#                                     Kafka's tools)
#
# Prints one line per check, "ok   ..." or "FAIL ...", each led by its target, then
# "N passed, N failed"; exits non-zero if any check failed, and keeps the work directory (node
# logs, client output) then.
#
# Environment:
#   WREN_INTEROP_TARGETS   the targets, in order (default "single cluster kill")
#   WREN_INTEROP_TIMEOUT   seconds one client command may take (default 120)
#   WREN_INTEROP_KEEP      1: keep the work directory even when everything passed
#   WREN_BIN               the wren binary (default: built from this checkout)
#   WREN_INTEROP_JAVA_DIR  where the Java client is built, and used as it is if already built there
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
records=3000 # read by the first run
more=100      # produced after it: the second run must read these, and only these
extra_config='
[groups]
group.initial.rebalance.delay.ms = 0
group.consumer.heartbeat.interval.ms = 500
group.consumer.min.heartbeat.interval.ms = 500
# A KIP-848 member whose leave was lost (its coordinator died as it closed) holds its partitions
# until its session ends: 10 s, not 45, for the checks that follow under faults.
group.consumer.session.timeout.ms = 10000
group.consumer.min.session.timeout.ms = 10000'
# shellcheck source=scripts/interop-lib.sh
source "$root/scripts/interop-lib.sh"
interop_init interop-groups
targets=$(interop_targets)
for tool in kcat java mvn "$py"; do
	command -v "$tool" >/dev/null || { echo "interop-groups: $tool not found (scripts/interop.sh installs what is needed)" >&2; exit 2; }
done

build_wren
build_java

# ---- group members -------------------------------------------------------------------------
# Each prints the value of every record it read, one a line, and commits what it read before it
# exits: group_C GROUP TOPIC.

group_kcat() {
	# The first run starts at the beginning (-o: kcat then ignores committed offsets), the
	# second at the committed offsets. Under faults the first run reads until it has read every
	# record once (-c), not to the first end of the partitions (-e), which it may reach while
	# half the records are still to come.
	if [[ ${second_run:-0} == 1 ]]; then
		tmo kcat -b "$bootstrap" -G "$1" "$2" -e -q
	elif [[ -n $fault_victim ]]; then
		tmo kcat -b "$bootstrap" -G "$1" "$2" -o beginning -q -c "$records"
	else
		tmo kcat -b "$bootstrap" -G "$1" "$2" -o beginning -e -q
	fi
}

group_py() { # client group topic
	tmo "$py" - "$1" "$2" "$3" "$bootstrap" <<'PY'
import sys, time
client, group, topic, bootstrap = sys.argv[1:5]
out = []
if client == "confluent":
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    idle = time.time() + 10
    while time.time() < idle:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m.value().decode())
        idle = time.time() + 5
    if out:
        c.commit(asynchronous=False)
    c.close()
else:
    from kafka import KafkaConsumer
    k = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=5000, enable_auto_commit=False)
    out = [m.value.decode() for m in k]
    if out:
        k.commit()
    k.close()
for v in out:
    print(v)
PY
}
group_confluent() { group_py confluent "$1" "$2"; }
group_kafka-python() { group_py kafka-python "$1" "$2"; }
group_java-classic() { tmo java -cp "$java_cp" wren.interop.Interop group "$bootstrap" "$2" "$1" classic 90; }
group_java-848() { tmo java -cp "$java_cp" wren.interop.Interop group "$bootstrap" "$2" "$1" consumer 90; }

# produce_range TOPIC FIRST LAST LOG: records FIRST..LAST (value = key = the number, so they
# spread over the partitions) with wren produce: franz-go, idempotent, acks=all.
produce_range() {
	seq "$2" "$3" | awk '{print $1 ":" $1}' | tmo "$wren" produce "$1" -K : -b "$bootstrap" >>"$4" 2>&1
}

# wait_lines FILE... : until every FILE has a line, or 60 s pass.
wait_lines() {
	local deadline=$((SECONDS + 60)) f
	for f in "$@"; do
		while [[ ! -s $f ]]; do
			((SECONDS < deadline)) || return 1
			sleep 0.1
		done
	done
}

# distinct_in_range FIRST LAST FILE...: how many of FIRST..LAST the files hold, then how many
# lines they have.
distinct_in_range() {
	local first=$1 last=$2
	shift 2
	cat "$@" | awk -v a="$first" -v b="$last" '$1 ~ /^[0-9]+$/ && $1 >= a && $1 <= b { if (!seen[$1]++) d++ } { l++ } END { print d + 0, l + 0 }'
}

# wait_group_empty GROUP LOG: until the group has no member (state Empty), or 60 s pass.
wait_group_empty() {
	local deadline=$((SECONDS + 60)) started=$SECONDS
	until "$wren" group describe "$1" --state -b "$bootstrap" >"$2" 2>&1 && awk 'NR == 2 && $(NF - 1) == "Empty" { e = 1 } END { exit !e }' "$2"; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
	echo "$1 empty after $((SECONDS - started)) s" >>"$2"
}

# wait_coordinator_moved GROUP NODE: until FindCoordinator names another node than NODE for
# GROUP, or 30 s pass.
wait_coordinator_moved() {
	local deadline=$((SECONDS + 30)) c
	while :; do
		c=$(coordinator_of "$1" || true)
		[[ -n $c && $c != "$2" ]] && return 0
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# check_coordinator GROUP NODE: on a cluster, FindCoordinator at the bootstrap node names NODE,
# the node group_for picked for the group (neither the controller nor the bootstrap node).
check_coordinator() {
	[[ $target == cluster ]] || return 0
	local got
	got=$(coordinator_of "$1" || true)
	if [[ $got == "$2" ]]; then
		ok "$1: FindCoordinator at node $boot_node names node $got (controller node $controller)"
	else
		fail "$1: FindCoordinator at node $boot_node names node '$got', want node $2, the leader of the group's __consumer_offsets partition"
	fi
}

# group_step MEMBER...: MEMBER is kcat, confluent, kafka-python, java-classic or java-848; with
# two, both run side by side in one group. A fresh topic of 4 partitions gets 1..records; the
# members read it in a first run and commit; records+1..records+more come next, and one member
# reads them in a second run of the group, which must resume at the committed offsets: read
# those and no others. Under faults half the records come before the first run and half while
# the group's coordinator is down, and every record must be read at least once over both runs.
group_step() {
	local members=("$@") m i
	local name="${members[0]}${members[1]:+-x${#members[@]}}"
	local topic="$tprefix-$name" log="$work/$target/$name.log" dir="$work/$target/$name"
	local group coord pids=() outs=() second_run=0 d l
	mkdir -p "$dir"
	: >"$log"
	if ! create_topic "$topic" 4 "$log"; then
		fail "$name: wren topic create $topic -r $rf" "$log"
		return
	fi
	read -r group coord < <(group_for "$name" 2>>"$log") || { fail "$name: no group id whose coordinator is not the bootstrap node" "$log"; return; }
	fault_start "$coord"
	local first=$records
	# Both KIP-848 members join an empty topic first, so the records produced next are shared
	# between them by the broker's assignment. Otherwise, under faults, half the records first.
	if [[ ${#members[@]} == 1 ]]; then
		[[ -n $fault_victim ]] && first=$((records / 2))
		produce_range "$topic" 1 "$first" "$log" || { fail "$name: wren produce 1..$first to $topic" "$log"; return; }
	else
		first=0
	fi
	i=0
	for m in "${members[@]}"; do
		outs+=("$dir/run1-$i")
		"group_$m" "$group" "$topic" >"$dir/run1-$i" 2>>"$log" &
		pids+=($!)
		i=$((i + 1))
	done
	if [[ ${#members[@]} -gt 1 ]]; then
		# Until the broker's assignment settled: every member owns partitions.
		local owners=0 deadline=$((SECONDS + 60))
		while ((SECONDS < deadline)); do
			owners=$({ "$wren" group describe "$group" --members -b "$bootstrap" 2>/dev/null || true; } | awk 'NR>1 && $5>0 {n++} END {print n+0}')
			[[ $owners == "${#members[@]}" ]] && break
			sleep 0.5
		done
		if [[ $owners == "${#members[@]}" ]]; then
			ok "$name: all ${#members[@]} members of $group own partitions"
		else
			fail "$name: $owners of ${#members[@]} members of $group own partitions after 60 s" "$log"
		fi
		[[ -n $fault_victim ]] && first=$((records / 2))
		produce_range "$topic" 1 "$first" "$log" || fail "$name: wren produce 1..$first to $topic" "$log"
	fi
	if [[ -n $fault_victim ]]; then
		wait_lines "${outs[@]}" || echo "interop-groups: a member read nothing within 60 s" >>"$log"
		fault_mid "during $name's first run, group $group"
	fi
	if ((first < records)); then
		produce_range "$topic" $((first + 1)) "$records" "$log" || fail "$name: wren produce $((first + 1))..$records to $topic${fault_note:+ ($fault_note)}" "$log"
	fi
	fault_end
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || echo "interop-groups: member $i of the first run exited with status $?" >>"$log"
	done
	second_run=1
	local all=$((records + more))
	produce_range "$topic" $((records + 1)) "$all" "$log" || fail "$name: wren produce $((records + 1))..$all to $topic" "$log"
	"group_${members[0]}" "$group" "$topic" >"$dir/run2" 2>>"$log" || echo "interop-groups: the second run exited with status $?" >>"$log"

	local counts=() c d1 l1 d2 l2 dn ln dt lt
	for m in "${outs[@]}"; do counts+=("$(wc -l <"$m")"); done
	read -r d1 l1 <<<"$(distinct_in_range 1 "$records" "${outs[@]}")"
	read -r d2 l2 <<<"$(distinct_in_range 1 "$all" "${outs[@]}" "$dir/run2")"
	read -r dn ln <<<"$(distinct_in_range $((records + 1)) "$all" "$dir/run2")"
	local second
	second=$(wc -l <"$dir/run2")
	if [[ -z $fault_victim ]]; then
		if [[ $d1 == "$records" && $l1 == "$records" ]]; then
			ok "$name group $group, first run reads every record once ($records${counts[1]:+: ${counts[*]} per member})"
		else
			fail "$name group $group, first run: $d1 distinct of $l1 read (per member ${counts[*]}), want $records once each" "$log"
		fi
		if [[ ${#members[@]} -gt 1 ]]; then
			local busy=0
			for c in "${counts[@]}"; do ((c > 0)) && busy=$((busy + 1)); done
			if [[ $busy == "${#members[@]}" ]]; then
				ok "$name group $group, every member got records (${counts[*]})"
			else
				fail "$name group $group: only $busy of ${#members[@]} members got records (${counts[*]})" "$log"
			fi
		fi
		if [[ $dn == "$more" && $ln == "$more" ]]; then
			ok "$name group $group, second run resumes at the committed offsets (reads the $more new records only)"
		else
			fail "$name group $group, second run read $ln records, $dn of them the $more new ones; want those $more only" "$log"
		fi
		check_coordinator "$group" "$coord"
	else
		# The topic itself: the idempotent producer wrote each record exactly once.
		read -r dt lt <<<"$(tmo kcat -C -b "$bootstrap" -t "$topic" -o beginning -e -q 2>>"$log" | distinct_in_range 1 "$all" /dev/stdin)"
		if [[ $dt == "$all" && $lt == "$all" ]]; then
			ok "$name: $topic holds each of the $all records of wren produce (idempotent) exactly once ($fault_note)"
		else
			fail "$name: $topic holds $dt distinct of $lt records, want each of $all exactly once ($fault_note)" "$log"
		fi
		if [[ $d2 == "$all" ]]; then
			ok "$name group $group reads every record at least once over two runs (first ${counts[*]}, second $second, $((l2 - all)) read twice; coordinator $fault_note)"
		else
			fail "$name group $group: $d2 of $all records read over two runs (first ${counts[*]}, second $second; coordinator $fault_note)" "$log"
		fi
	fi
}

group_steps() {
	local m
	for m in kcat confluent kafka-python; do
		fault_heal || return 0
		group_step "$m"
	done
	if [[ $java_ok == 1 ]]; then
		fault_heal || return 0
		group_step java-classic
		fault_heal || return 0
		group_step java-848 java-848
	else
		skip "java groups (the Java client did not build)"
	fi
	fault_victim=""
	fault_heal || true
}

# ---- Kafka's own tools ---------------------------------------------------------------------
# The verifiable producer and consumer (what Kafka's system tests drive), the console producer
# and consumer, and kafka-consumer-groups, from Apache Kafka's tool classes
# (scripts/kafka-fetch.sh).

kafka_libs="$("$root/scripts/kafka-fetch.sh")"
kafka() {
	tmo java -cp "$kafka_libs/*" -Dlog4j2.configurationFile="$(dirname "$kafka_libs")/config/log4j2.yaml" "$@"
}
VerifiableProducer=org.apache.kafka.tools.VerifiableProducer
VerifiableConsumer=org.apache.kafka.tools.VerifiableConsumer
ConsoleProducer=org.apache.kafka.tools.ConsoleProducer
ConsoleConsumer=org.apache.kafka.tools.consumer.ConsoleConsumer
ConsumerGroups=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand

# events FILE NAME: how many of the tool's JSON events are NAME.
events() { grep -c "\"name\":\"$2\"" "$1" || true; }

# verifiable_check PRODUCED CONSUMED: the (partition, offset, value) of every record the verifiable
# producer had acknowledged, against the verifiable consumer's record_data events: prints
# "ACKED SEEN READ" (acknowledged records, how many of them were read, records read in all);
# exits 1 if a record read is not what the producer's acknowledgement said was there.
verifiable_check() {
	$py - "$1" "$2" <<'PY'
import json, sys
acked = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("name") == "producer_send_success":
            acked[(e["partition"], e["offset"])] = e["value"]
seen, read, bad = set(), 0, []
for line in open(sys.argv[2]):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("name") == "record_data":
            read += 1
            k = (e["partition"], e["offset"])
            if k in acked:
                seen.add(k)
                if acked[k] != e["value"]:
                    bad.append("partition %d offset %d: value %r, acknowledged %r" % (k[0], k[1], e["value"], acked[k]))
print(len(acked), len(seen), read)
for b in bad[:10]:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# wait_events FILE NAME N PID: until FILE has N NAME events, PID exits, or 60 s pass.
wait_events() {
	local deadline=$((SECONDS + 60))
	while (($(events "$1" "$2") < $3)); do
		kill -0 "$4" 2>/dev/null || return 0
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

tool_steps() {
	local dir="$work/$target/tools" topic="$tprefix-verifiable" log pid n acked seen read proto d l
	mkdir -p "$dir"
	log="$dir/topic.log"
	if ! create_topic "$topic" 4 "$log"; then
		fail "wren topic create $topic -r $rf" "$log"
		return
	fi

	# The verifiable producer: acks=all, no retries (the tool's own setting), so under faults
	# the sends to the victim's partitions fail until they have new leaders; throttled there,
	# so that the victim dies mid-run.
	log="$dir/verifiable-producer.log"
	fault_start "${third:-}"
	local throughput=-1
	[[ -n $fault_victim ]] && throughput=1000
	kafka "$VerifiableProducer" --bootstrap-server "$bootstrap" --topic "$topic" --max-messages "$records" \
		--acks -1 --throughput "$throughput" >"$dir/produced.json" 2>"$log" &
	pid=$!
	if [[ -n $fault_victim ]]; then
		wait_events "$dir/produced.json" producer_send_success $((records / 4)) "$pid" || true
		fault_mid "while the verifiable producer produces to $topic"
		wait_led_elsewhere "$topic" "$fault_victim" || echo "interop-groups: $topic still led by node $fault_victim 60 s after its kill" >>"$log"
		n=$(events "$dir/produced.json" producer_send_success)
		wait_events "$dir/produced.json" producer_send_success $((n + 1)) "$pid" || true
		fault_end
	fi
	wait "$pid" || echo "interop-groups: the verifiable producer exited with status $?" >>"$log"
	acked=$(events "$dir/produced.json" producer_send_success)
	n=$(events "$dir/produced.json" producer_send_error)
	if [[ -z $fault_victim && $acked == "$records" && $n == 0 ]]; then
		ok "kafka-verifiable-producer: $records records acknowledged (acks=all)"
	elif [[ -n $fault_victim && $acked -gt 0 && $((acked + n)) == "$records" ]]; then
		ok "kafka-verifiable-producer: $acked of $records records acknowledged, $n refused without retries ($fault_note)"
	else
		fail "kafka-verifiable-producer: $acked of $records records acknowledged, $n failed${fault_note:+ ($fault_note)}" "$log"
	fi
	fault_heal || return 0

	# The verifiable consumer, once per group protocol, each in its own group (coordinator: the
	# third node), reads until it has read every record the log holds; under faults the group's
	# coordinator is SIGKILLed and restarted once it has read some.
	local total groups=()
	total=$(high_watermarks "$topic")
	for proto in classic consumer; do
		local group coord
		read -r group coord < <(group_for "$tprefix-verifiable-$proto" 2>>"$log") || { fail "no group id for the verifiable consumer" "$log"; return; }
		groups+=("$group")
		log="$dir/verifiable-consumer-$proto.log"
		fault_start "$coord"
		kafka "$VerifiableConsumer" --bootstrap-server "$bootstrap" --topic "$topic" --group-id "$group" \
			--group-protocol "$proto" --reset-policy earliest --verbose --max-messages "$total" \
			>"$dir/consumed-$proto.json" 2>"$log" &
		pid=$!
		if [[ -n $fault_victim ]]; then
			wait_events "$dir/consumed-$proto.json" records_consumed 1 "$pid" || true
			fault_mid "while the verifiable consumer ($proto) reads $topic in group $group"
			wait_coordinator_moved "$group" "$fault_victim" || echo "interop-groups: $group's coordinator still node $fault_victim 30 s after its kill" >>"$log"
			fault_end
		fi
		wait "$pid" || echo "interop-groups: the verifiable consumer exited with status $?" >>"$log"
		if ! read -r acked seen read < <(verifiable_check "$dir/produced.json" "$dir/consumed-$proto.json" 2>>"$log"); then
			fail "kafka-verifiable-consumer --group-protocol $proto: records differ from what the producer's acknowledgements said" "$log"
		elif [[ $seen == "$acked" && $read -ge $total && $(events "$dir/consumed-$proto.json" offsets_committed) -gt 0 ]] &&
			{ [[ -n $fault_victim ]] || [[ $read == "$total" ]]; }; then
			ok "kafka-verifiable-consumer --group-protocol $proto, group $group: read all $acked acknowledged records ($read read, log holds $total)${fault_note:+; coordinator $fault_note}"
		else
			fail "kafka-verifiable-consumer --group-protocol $proto, group $group: $seen of $acked acknowledged records read ($read read, log holds $total)${fault_note:+; coordinator $fault_note}" "$log"
		fi
		fault_heal || return 0
		check_coordinator "$group" "$coord"
	done

	# kafka-consumer-groups on both groups: --describe shows every partition committed at the log
	# end, --reset-offsets --to-earliest --execute moves them back to 0, the console consumer in
	# the same group (same protocol) reads every record again, and --delete removes the groups.
	local i
	for i in 0 1; do
		local group=${groups[$i]} proto
		proto=$([[ $i == 0 ]] && echo classic || echo consumer)
		# The group must be empty for --reset-offsets. Under faults a member whose leave went to
		# the coordinator as it died stays until its session ends (as in Kafka).
		log="$dir/groups-state-$proto.log"
		if ! wait_group_empty "$group" "$log"; then
			fail "$group is not empty 60 s after its consumer exited" "$log"
		fi
		log="$dir/groups-describe-$proto.log"
		# A row per partition with a committed offset (the verifiable producer's sticky
		# partitioner may leave some partitions empty, and nothing is committed for those).
		if kafka "$ConsumerGroups" --bootstrap-server "$bootstrap" --describe --group "$group" >"$log" 2>&1 &&
			[[ $(awk -v t="$topic" '$2 == t { rows++; sum += $4; if ($4 != $5 || $6 != 0) bad++ } END { print rows + 0, bad + 0, sum + 0 }' "$log") =~ ^[1-4]\ 0\ $total$ ]]; then
			ok "kafka-consumer-groups --describe --group $group ($proto): committed at the log end of every partition that has records ($total in all), lag 0"
		else
			fail "kafka-consumer-groups --describe --group $group ($proto): want CURRENT-OFFSET = LOG-END-OFFSET and LAG 0 in every row, $total in all" "$log"
		fi
		log="$dir/groups-reset-$proto.log"
		if kafka "$ConsumerGroups" --bootstrap-server "$bootstrap" --reset-offsets --group "$group" --topic "$topic" \
			--to-earliest --execute >"$log" 2>&1 &&
			[[ $(awk -v t="$topic" '$2 == t && $4 == 0 { n++ } END { print n + 0 }' "$log") == 4 ]]; then
			ok "kafka-consumer-groups --reset-offsets --to-earliest --execute --group $group: 4 partitions at offset 0"
		else
			fail "kafka-consumer-groups --reset-offsets --to-earliest --execute --group $group: want 4 partitions of $topic at NEW-OFFSET 0" "$log"
		fi
		log="$dir/console-consumer-$proto.log"
		n=$(kafka "$ConsoleConsumer" --bootstrap-server "$bootstrap" --topic "$topic" --group "$group" \
			--consumer-property "group.protocol=$proto" --max-messages "$total" --timeout-ms 30000 2>"$log" | wc -l || true)
		if [[ $n == "$total" ]]; then
			ok "kafka-console-consumer --group $group (group.protocol=$proto) reads all $total records again after the reset"
		else
			fail "kafka-console-consumer --group $group (group.protocol=$proto) read $n records after the reset, want $total" "$log"
		fi
	done
	log="$dir/groups-delete.log"
	if kafka "$ConsumerGroups" --bootstrap-server "$bootstrap" --delete --group "${groups[0]}" --group "${groups[1]}" >"$log" 2>&1 &&
		grep -q "Deletion of requested consumer groups .* was successful" "$log" &&
		kafka "$ConsumerGroups" --bootstrap-server "$bootstrap" --list >"$dir/groups-list.log" 2>&1 &&
		! grep -qxF -e "${groups[0]}" -e "${groups[1]}" "$dir/groups-list.log"; then
		ok "kafka-consumer-groups --delete ${groups[*]}: deleted, and --list no longer shows them"
	else
		cat "$dir/groups-list.log" >>"$log" 2>/dev/null || true
		fail "kafka-consumer-groups --delete ${groups[*]}, then --list without them" "$log"
	fi

	# The console producer (idempotent by the Java client's default) and the console consumer
	# in a KIP-848 group, under faults with the third node SIGKILLed mid-produce.
	topic="$tprefix-console"
	log="$dir/console.log"
	if ! create_topic "$topic" 4 "$log"; then
		fail "wren topic create $topic -r $rf" "$log"
		return
	fi
	fault_start "${third:-}"
	local fifo="$dir/console.fifo" fd half=$((records / 2))
	mkfifo "$fifo"
	kafka "$ConsoleProducer" --bootstrap-server "$bootstrap" --topic "$topic" <"$fifo" >>"$log" 2>&1 &
	pid=$!
	exec {fd}>"$fifo"
	seq 1 "$half" >&"$fd"
	if [[ -n $fault_victim ]]; then
		wait_high_watermarks "$topic" 1 "$pid" || true
		fault_mid "while the console producer produces to $topic" {fd}>&-
		wait_led_elsewhere "$topic" "$fault_victim" || true
		fault_end {fd}>&-
	fi
	seq $((half + 1)) "$records" >&"$fd"
	exec {fd}>&-
	wait "$pid" || echo "interop-groups: the console producer exited with status $?" >>"$log"
	local group coord
	read -r group coord < <(group_for "$tprefix-console" 2>>"$log") || { fail "no group id for the console consumer" "$log"; return; }
	kafka "$ConsoleConsumer" --bootstrap-server "$bootstrap" --topic "$topic" --group "$group" --from-beginning \
		--consumer-property group.protocol=consumer --max-messages "$records" --timeout-ms 30000 \
		>"$dir/console.out" 2>>"$log" || true
	read -r d l <<<"$(distinct_in_range 1 "$records" "$dir/console.out")"
	if [[ $d == "$records" && $l == "$records" ]]; then
		ok "kafka-console-producer $records lines, kafka-console-consumer (group.protocol=consumer, group $group) reads each once${fault_note:+ ($fault_note)}"
	else
		fail "kafka-console-producer $records lines, kafka-console-consumer (group.protocol=consumer, group $group) read $d distinct of $l${fault_note:+ ($fault_note)}" "$log"
	fi
	fault_victim=""
	fault_heal || true
}

for target in $targets; do
	target_up "$target"
	mkdir -p "$work/$target"
	step_started=$SECONDS
	if [[ $target == kill ]]; then tprefix=groups-kill; else tprefix=groups; fi
	group_steps
	tool_steps
	if ! target_alive; then
		fail "a node exited during the run" "$(node_logs | head -n 1)"
	fi
	echo "interop-groups: $tag took $((SECONDS - step_started)) s"
	[[ $target == cluster ]] || target_down
done

interop_finish
