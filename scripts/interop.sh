#!/usr/bin/env bash
# interop.sh: wren against Kafka clients that nobody here wrote.
#
# Builds wren and, for each client (kcat and confluent-kafka on librdkafka, kafka-python, Apache
# Kafka's Java client), produces records with every compression codec the client has, then
# consumes them back with the same client and compares: count, keys, values, headers, offsets
# and order per partition. A few cross-reads check that one client reads what another wrote.
#
# It does so against each target in turn (scripts/interop-lib.sh): one node on free loopback
# ports; a three-node cluster (scripts/local-cluster.sh), topics with three replicas, clients
# bootstrapping from a node that is not the controller; and the same cluster while a node is
# SIGKILLed and restarted in the middle of each client's produce (one round trip per client,
# the victim the controller or the node that is neither controller nor bootstrap, in turn):
# there the idempotent producers' records (confluent-kafka, Java) must be read back exactly
# once, the others' (kcat, kafka-python) at least once, nothing lost, offsets without gaps.
#
# On the three-node cluster, Apache Kafka's kafka-configs and kafka-acls (scripts/kafka-fetch.sh
# fetches them) alter and describe SCRAM credentials and client quotas and add, list and remove
# ACLs through the node that is not the controller; each node also has a SASL_SSL listener
# (the PLAINTEXT clients are super users there), through which the Java client (SCRAM-SHA-512)
# and kafka-python (SCRAM-SHA-256, in a group) produce and consume as the SCRAM user those tools
# made and granted. Last, one node with an SSL listener requiring client certificates and a
# SASL_SSL one, where every client has only what ACLs grant it (ssl_steps).
#
# Usage: scripts/interop.sh            (as root on Debian 12, or with the packages installed)
#
# Prints one line per check, "ok   ...", "FAIL ..." or "skip ... (why)", each led by its target
# ([1 node], [3 nodes], [3 nodes, kill]), then "N passed, N failed"; exits non-zero if any check
# failed. On failure the client's output and the tails of the node logs follow the FAIL line,
# and the work directory (configs, node logs, client logs) is kept.
#
# Installs when missing: Debian's kcat, openssl, python3-confluent-kafka, python3-kafka (librdkafka
# 2.0.2 behind the first two; kafka-python 2.0.x) and, where Debian has them, python3-snappy,
# python3-lz4 and python3-zstandard (kafka-python's codecs); maven if absent. The Python clients
# run under /usr/bin/python3, where Debian's packages are, whatever python3 is first on PATH.
#
# Environment:
#   WREN_INTEROP_TARGETS   the targets, in order (default "single cluster kill"; " ", a blank,
#                          runs none of them, only the SSL checks)
#   WREN_INTEROP_RECORDS   records per check (default 10000)
#   WREN_INTEROP_TIMEOUT   seconds one client command may take (default 120)
#   WREN_INTEROP_KEEP      1: keep the work directory even when everything passed
#   WREN_INTEROP_SSL       0: skip the SSL checks (default 1: one node with an SSL listener
#                          requiring client certificates and a SASL_SSL one, ACLs granting
#                          the clients' principals, kcat, kafka-python and Java over them)
#   WREN_BIN               the wren binary (default: built from this checkout)
#   WREN_INTEROP_JAVA_DIR  where the Java client is built, and used as it is if already built there
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
records="${WREN_INTEROP_RECORDS:-10000}"
client_timeout="${WREN_INTEROP_TIMEOUT:-120}"
codecs=(none gzip snappy lz4 zstd)
extra_config='
[topics]
auto.create.topics.enable = false'
# shellcheck source=scripts/interop-lib.sh
source "$root/scripts/interop-lib.sh"
interop_init interop
targets=$(interop_targets)

# ---- install ------------------------------------------------------------------------------

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_install() {
	if [[ $apt_updated == 0 ]]; then
		apt-get update -qq
		apt_updated=1
	fi
	apt-get install -y -qq "$@" >/dev/null
}

need=()
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[[ -x $py ]] || need+=(python3)
# The checks run from / : in the repository root, Go's kafka/ directory would
# import as an empty namespace package named kafka.
if ! { [[ -x $py ]] && (cd / && $py -c 'import confluent_kafka') 2>/dev/null; }; then need+=(python3-confluent-kafka); fi
if ! { [[ -x $py ]] && (cd / && $py -c 'import kafka.producer') 2>/dev/null; }; then need+=(python3-kafka); fi
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v java >/dev/null 2>&1 || need+=(default-jdk-headless)
if [[ ${#need[@]} -gt 0 ]]; then
	echo "interop: installing ${need[*]}"
	apt_install "${need[@]}"
fi
# kafka-python's optional codec libraries: install what Debian has; a codec whose library is
# still missing is skipped below, with the reason.
for pkg_mod in python3-snappy:snappy python3-lz4:lz4.frame python3-zstandard:zstandard; do
	pkg=${pkg_mod%%:*} mod=${pkg_mod#*:}
	if ! $py -c "import $mod" 2>/dev/null; then
		if [[ $apt_updated == 0 ]]; then apt-get update -qq; apt_updated=1; fi
		if apt-cache show "$pkg" >/dev/null 2>&1; then
			apt_install "$pkg" || echo "interop: could not install $pkg"
		else
			echo "interop: Debian has no $pkg"
		fi
	fi
done

# ---- wren and the Java client --------------------------------------------------------------

build_wren
build_java

# ---- clients -------------------------------------------------------------------------------
# Each client has produce_C TOPIC CODEC EXPECTED and consume_C TOPIC DUMP; output goes to the
# caller's log. A client command that outlives client_timeout fails its check.

produce_kcat() {
	# kcat sets headers per run, not per record (-H): records.py gen --static-header matches.
	# librdkafka's producer defaults: acks=all, idempotence off.
	cut -f1,2 "$3" | tr '\t' ':' |
		tmo kcat -P -b "$bootstrap" -t "$1" -z "$2" -K: -H "tag=$1" -H client=kcat -X acks=all
}
consume_kcat() {
	tmo kcat -C -b "$bootstrap" -t "$1" -o beginning -e -q -f '%p\t%o\t%k\t%s\t%h\n' >"$2"
}
expected_kcat() { $py "$pydir/records.py" gen "$1" "$records" --static-header "tag=$1" --static-header client=kcat; }

produce_confluent() { tmo $py "$pydir/confluent_client.py" produce "$bootstrap" "$1" "$2" "$3" --timeout "$client_timeout"; }
consume_confluent() { tmo $py "$pydir/confluent_client.py" consume "$bootstrap" "$1" "$2" --timeout "$client_timeout"; }
expected_confluent() { $py "$pydir/records.py" gen "$1" "$records"; }

produce_kafka-python() { tmo $py "$pydir/kafka_python_client.py" produce "$bootstrap" "$1" "$2" "$3" --timeout "$client_timeout"; }
consume_kafka-python() { tmo $py "$pydir/kafka_python_client.py" consume "$bootstrap" "$1" "$2" --timeout "$client_timeout"; }
expected_kafka-python() { $py "$pydir/records.py" gen "$1" "$records"; }

produce_java() { tmo java -cp "$java_cp" wren.interop.Interop produce "$bootstrap" "$1" "$2" "$3" "$client_timeout"; }
consume_java() { tmo java -cp "$java_cp" wren.interop.Interop consume "$bootstrap" "$1" "$2" "$client_timeout"; }
expected_java() { $py "$pydir/records.py" gen "$1" "$records"; }

# idempotence[C]: 1 when client C's producer is idempotent (its records must be there exactly
# once even across a failover), 0 when a retry may write a batch twice.
declare -A idempotence=([kcat]=0 [confluent]=1 [kafka-python]=0 [java]=1)

# Topics whose records were produced and read back intact on this target, for the cross-reads.
declare -A produced=()

# data_dir: where the node behind bootstrap keeps its partitions (on a cluster every node holds
# a replica of every partition of the checks' topics).
data_dir() {
	if [[ $target == single ]]; then echo "$work/single/data"; else echo "$work/cluster/data$boot_node"; fi
}

# batches_on_disk TOPIC CODEC: read TOPIC's segments with wren dump-log and require every batch
# to be magic 2, valid and compressed with CODEC, so that a client that quietly falls back to
# no compression (librdkafka drops a codec when ApiVersions does not suit it) fails. Prints
# the batch count, or the first offending batch.
batches_on_disk() {
	local segs=("$(data_dir)/$1"-[0-9]*/*.log)
	"$wren" dump-log "${segs[@]}" | awk -v want="$2" '
		/^baseOffset:/ {
			n++
			codec = ""; magic = ""; valid = ""
			for (i = 1; i < NF; i++) {
				if ($i == "compresscodec:") codec = $(i + 1)
				if ($i == "magic:") magic = $(i + 1)
				if ($i == "isvalid:") valid = $(i + 1)
			}
			if (codec != want || magic != 2 || valid != "true") {
				if (!bad++) print "batch at " $2 ": compresscodec " codec " magic " magic " isvalid " valid ", want " want
			}
		}
		END {
			if (n == 0) { print "no batches on disk"; exit 1 }
			if (bad) { print bad " of " n " batches not " want; exit 1 }
			print n " " want " batches"
		}'
}

# produce_step CLIENT TOPIC CODEC EXPECTED LOG: produce EXPECTED with CLIENT. Under faults the
# producer reads a pipe that gets the records a third at a time: once some of the first third
# are acknowledged the victim is SIGKILLed; once its partitions have new leaders the second
# third goes while it is down (and the cluster must acknowledge some of it); the victim starts
# again, then the rest.
produce_step() {
	local client=$1 topic=$2 codec=$3 exp=$4 log=$5
	if [[ -z $fault_victim ]]; then
		"produce_$client" "$topic" "$codec" "$exp" >>"$log" 2>&1
		return
	fi
	local fifo="$work/$target/$topic.fifo" n third pid fd hw rc=0
	n=$(wc -l <"$exp")
	third=$((n / 3))
	mkfifo "$fifo"
	"produce_$client" "$topic" "$codec" "$fifo" >>"$log" 2>&1 &
	pid=$!
	# Read-write, so that opening does not wait for the producer; the pipe ends (EOF for the
	# producer) when this fd closes. The restarted node must not inherit it.
	exec {fd}<>"$fifo"
	tmo head -n "$third" "$exp" >&"$fd" || true
	wait_high_watermarks "$topic" 1 "$pid" || echo "interop: nothing of $topic acknowledged within 60 s" >>"$log"
	fault_mid "while $client produces to $topic" {fd}>&-
	wait_led_elsewhere "$topic" "$fault_victim" ||
		echo "interop: partitions of $topic still led by node $fault_victim 60 s after its kill" >>"$log"
	hw=$(high_watermarks "$topic")
	tmo sed -n "$((third + 1)),$((2 * third))p" "$exp" >&"$fd" || true
	wait_high_watermarks "$topic" $((hw + 1)) "$pid" ||
		echo "interop: no record of $topic acknowledged within 60 s of node $fault_victim's kill" >>"$log"
	fault_end {fd}>&-
	tmo tail -n "+$((2 * third + 1))" "$exp" >&"$fd" || true
	exec {fd}>&-
	wait "$pid" || rc=$?
	rm -f "$fifo"
	return $rc
}

# roundtrip CLIENT CODEC: create a topic, produce, consume with the same client, compare.
roundtrip() {
	local client=$1 codec=$2
	local name="$client-$codec"
	local topic="$tprefix-$name" exp="$work/$target/$name.tsv" dump="$work/$target/$name.dump"
	local log="$work/$target/$name.log" mode="" what="$records records"
	: >"$log"
	if ! create_topic "$topic" 3 "$log"; then
		fail "$client $codec: wren topic create $topic -r $rf" "$log"
		return
	fi
	"expected_$client" "$topic" >"$exp"
	if ! produce_step "$client" "$topic" "$codec" "$exp" "$log"; then
		fail "$client $codec: produce $records records${fault_note:+ ($fault_note)}" "$log"
		return
	fi
	local batches
	if ! batches=$(batches_on_disk "$topic" "$codec" 2>&1); then
		echo "$batches" >>"$log"
		fail "$client $codec: batches on disk are not all $codec" "$log"
		return
	fi
	if ! "consume_$client" "$topic" "$dump" >>"$log" 2>&1; then
		fail "$client $codec: consume${fault_note:+ ($fault_note)}" "$log"
		return
	fi
	if [[ -n $fault_victim ]]; then
		if [[ ${idempotence[$client]} == 1 ]]; then
			what="$records records exactly once (idempotent)"
		else
			mode=--at-least-once
			what="$records records at least once (no idempotence)"
		fi
	fi
	if ! $py "$pydir/records.py" check $mode "$exp" "$dump" >>"$log" 2>&1; then
		fail "$client $codec: records read back differ from those produced${fault_note:+ ($fault_note)}" "$log"
		return
	fi
	produced[$name]=1
	ok "$client $codec $what ($(tail -n 1 "$log"), $batches${fault_note:+; $fault_note})"
}

# crossread READER WRITER CODEC: READER consumes what WRITER produced with CODEC.
crossread() {
	local reader=$1 writer=$2 codec=$3
	local topic="$tprefix-$writer-$codec" exp="$work/$target/$writer-$codec.tsv" dump="$work/$target/$reader-reads-$writer-$codec.dump"
	local log="$work/$target/$reader-reads-$writer-$codec.log"
	if [[ -z ${produced[$writer-$codec]:-} ]]; then
		skip "$reader reads $writer $codec (no intact $writer $codec topic to read)"
		return
	fi
	if ! "consume_$reader" "$topic" "$dump" >"$log" 2>&1; then
		fail "$reader reads $writer $codec: consume" "$log"
		return
	fi
	if ! $py "$pydir/records.py" check "$exp" "$dump" >>"$log" 2>&1; then
		fail "$reader reads $writer $codec: records differ from those produced" "$log"
		return
	fi
	ok "$reader reads $writer $codec $records records"
}

# codec_ok CLIENT CODEC: whether the client has the codec; says why not (a skip line) if not.
kcat_features=$(kcat -V 2>&1 | sed -n 's/.*builtin\.features=\([^ )]*\).*/\1/p')
kp_codecs="$work/logs/kafka-python-codecs.log"
if ! $py "$pydir/kafka_python_client.py" codecs >"$kp_codecs" 2>&1; then
	fail "kafka-python: the client does not load" "$kp_codecs"
fi
codec_ok() {
	local line
	case $1 in
	kcat)
		if [[ $2 != none && ",$kcat_features," != *",$2,"* ]]; then
			skip "kcat $2 (librdkafka built without it: builtin.features=$kcat_features)"
			return 1
		fi
		;;
	kafka-python)
		line=$(grep "^$2 " "$kp_codecs" || true)
		if [[ -z $line ]]; then
			skip "kafka-python $2 (the client does not load)"
			return 1
		elif [[ $line != "$2 ok" ]]; then
			skip "kafka-python $2 (${line#"$2 "})"
			return 1
		fi
		;;
	java)
		if [[ $java_ok != 1 ]]; then
			skip "java $2 (the Java client did not build)"
			return 1
		fi
		;;
	esac
}

# kcat_metadata: kcat -L lists interop-kcat-none with 3 partitions, each led by one of its rf
# replicas, all of them in sync, and every broker of the target.
kcat_metadata() {
	local log="$work/$target/kcat-metadata.log" topic="$tprefix-kcat-none" nodes=$rf
	if tmo kcat -L -b "$bootstrap" -t "$topic" >"$log" 2>&1 &&
		grep -q "^ $nodes brokers:$" "$log" &&
		grep -q "^  topic \"$topic\" with 3 partitions:$" "$log" &&
		[[ $(awk -v rf="$rf" '$1 == "partition" && $2 ~ /^[0-2],$/ {
				leader = $4; sub(/,$/, "", leader); sub(/,$/, "", $6); n = split($6, r, ","); m = split($8, s, ",")
				for (i = 1; i <= n; i++) if (r[i] == leader) led++
				if (n == rf && m == rf) full++
			} END { print led + 0, full + 0 }' "$log") == "3 3" ]]; then
		ok "kcat -L lists $nodes brokers and $topic with 3 partitions, each led by one of its $rf replicas, all in sync"
	else
		fail "kcat -L does not list $nodes brokers and $topic with 3 partitions, each led by one of its $rf replicas, all in sync" "$log"
	fi
}

# client_steps: every check, against the target that is up.
client_steps() {
	local client codec
	for client in kcat confluent kafka-python java; do
		for codec in "${codecs[@]}"; do
			codec_ok "$client" "$codec" && roundtrip "$client" "$codec"
		done
		if [[ $client == kcat ]]; then
			kcat_metadata
		fi
		if [[ $client == confluent ]]; then
			# A transactional producer: committed records read_committed, aborted ones never.
			local log="$work/$target/confluent-transactions.log"
			if tmo $py "$pydir/confluent_client.py" transactions "$bootstrap" >"$log" 2>&1; then
				ok "confluent transactions ($(grep -m1 '^read_committed' "$log"))"
			else
				fail "confluent transactions: init_transactions, commit, abort, read_committed" "$log"
			fi
		fi
	done

	# The checker can fail: records.py check must reject damaged copies of a dump it accepted
	# (lost, duplicated, swapped, renumbered, altered records), or every "ok" above would mean
	# nothing.
	local t selftest_done=0
	for t in kcat-none java-none confluent-none kafka-python-none; do
		if [[ -n ${produced[$t]:-} ]]; then
			log="$work/$target/selftest.log"
			if $py "$pydir/records.py" selftest "$work/$target/$t.tsv" "$work/$target/$t.dump" >"$log" 2>&1; then
				ok "checker rejects damaged copies of the $t dump ($(tail -n 1 "$log"))"
			else
				fail "checker self-test on the $t dump" "$log"
			fi
			selftest_done=1
			break
		fi
	done
	[[ $selftest_done == 1 ]] || skip "checker self-test (no intact dump to damage)"

	# Cross-reads: each client reads another's compression.
	crossread java kcat zstd
	crossread kcat java snappy
	crossread confluent kafka-python lz4
	crossread kafka-python java zstd
	crossread kafka-python confluent gzip
}

# fault_steps: each client's round trip once, with one codec, while a node is SIGKILLed and
# restarted mid-produce: the third node (which leads one partition of each topic) and the
# controller in turn, never the node the clients bootstrap from. The cluster is whole again
# before each.
fault_steps() {
	local client codec victim i=0
	for client in kcat:gzip confluent:zstd kafka-python:lz4 java:snappy; do
		codec=${client#*:} client=${client%:*}
		codec_ok "$client" "$codec" || { codec_ok "$client" none && codec=none; } || continue
		fault_heal || return 0
		if ((i++ % 2 == 0)); then victim=$third; else victim=$controller; fi
		fault_start "$victim"
		roundtrip "$client" "$codec"
	done
	fault_victim=""
	fault_heal || true
}

# ssl_steps: one node whose client listener is SSL with ssl.client.auth = required, certificates
# made here with openssl (a CA, the broker's for 127.0.0.1, an admin's and a client's). The
# broker authorizes as a user's would: it authenticates every client, so no ACL means no access
# (allow.everyone.if.no.acl.found derives to false); the admin certificate's principal is a
# super user; ssl.principal.mapping.rules turn a certificate's CN into the user name. The admin
# creates the topics, a SCRAM user and ACLs (wren acl add) granting the client certificate's
# principal and the SCRAM user WRITE, READ and DESCRIBE on their topics and READ on their
# groups. kcat produces and consumes over SSL, kafka-python reads the same records back in a
# group, and kcat without a client certificate is refused. A second listener, SASL_SSL without
# client certificates, takes the SCRAM user: the Java client produces with SCRAM-SHA-512,
# kafka-python reads the records in a group with SCRAM-SHA-256, kcat reads them with PLAIN,
# wrong passwords are refused, and a second SCRAM user without ACLs gets a topic authorization
# error. kcat's SCRAM is not tried: Debian's librdkafka (2.0) sends the client's nonce twice in
# its final message, which wren refuses as Kafka does since the fix of CVE-2024-56128
# (librdkafka fixed it in 2.6.1).
ssl_steps() {
	local dir="$work/ssl" port sport ctl deadline pid log n cn
	tag="[1 node, SSL]"
	mkdir -p "$dir/data"
	(
		make_ca_broker "$dir"
		cd "$dir"
		for cn in client admin; do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=wren/CN=interop-$cn" \
				-keyout "$cn.key" -out "$cn.csr"
			openssl x509 -req -in "$cn.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
				-extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$cn.crt"
		done
	) >"$dir/openssl.log" 2>&1 || {
		fail "openssl could not make the test certificates" "$dir/openssl.log"
		return 0
	}
	port=$(free_port)
	sport=$(free_port)
	ctl=$(free_port)
	# The subject DN is CN=interop-client,O=wren (RFC 2253, last RDN first): the rule keeps the CN.
	cat >"$dir/wren.toml" <<-EOF
		[broker]
		node.id = 1
		log.dirs = ["$dir/data"]
		listeners = ["SSL://127.0.0.1:$port", "SASL_SSL://127.0.0.1:$sport", "CONTROLLER://127.0.0.1:$ctl"]
		sasl.enabled.mechanisms = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]

		[cluster]
		controller.quorum.voters = ["1@127.0.0.1:$ctl"]

		[topics]
		auto.create.topics.enable = true

		[security]
		ssl.keystore.location = "$dir/broker.pem"
		ssl.truststore.location = "$dir/ca.pem"
		ssl.client.auth = "required"
		listener.name.sasl_ssl.ssl.client.auth = "none"
		ssl.principal.mapping.rules = "RULE:^CN=([^,]+),O=wren\$/\$1/,DEFAULT"
		super.users = ["User:interop-admin"]

		[http]
		listen = ""
	EOF
	"$wren" serve --config "$dir/wren.toml" >"$dir/wren.log" 2>&1 &
	pid=$!
	single_pid=$pid
	deadline=$((SECONDS + 30))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
			fail "wren with an SSL listener did not start" "$dir/wren.log"
			return 0
		fi
		sleep 0.1
	done
	# The admin (a super user) creates the topics and grants the client certificate's principal
	# what its clients do: produce, fetch, metadata, and a group's join and commits.
	local -a admin=(--bootstrap-server "127.0.0.1:$port" --tls-truststore "$dir/ca.pem"
		--tls-cert "$dir/admin.crt" --tls-key "$dir/admin.key")
	log="$dir/acl.log"
	if { tmo "$wren" topic create "${admin[@]}" -p 3 -r 1 ssl sasl &&
		tmo "$wren" acl add "${admin[@]}" --allow-principal User:interop-client \
			--operation Write --operation Read --operation Describe --topic ssl &&
		tmo "$wren" acl add "${admin[@]}" --allow-principal User:interop-client --operation Read --group interop-ssl &&
		tmo "$wren" acl add "${admin[@]}" --allow-principal User:device-1 \
			--operation Write --operation Read --operation Describe --topic sasl &&
		tmo "$wren" acl add "${admin[@]}" --allow-principal User:device-1 --operation Read --group interop-sasl &&
		tmo "$wren" acl list "${admin[@]}" >"$dir/acl-list.out"; } >"$log" 2>&1 &&
		[[ $(grep -c '^ALLOW' "$dir/acl-list.out") == 8 ]]; then
		ok "the super user (User:interop-admin, its certificate's CN) creates the topics and 8 ACLs with wren acl add"
	else
		cat "$dir/acl-list.out" >>"$log" 2>/dev/null || true
		fail "the super user creates the topics and ACLs with wren acl add (wren acl list: want 8 ALLOW lines)" "$log"
	fi
	local -a tls=(-X security.protocol=ssl -X "ssl.ca.location=$dir/ca.pem"
		-X "ssl.certificate.location=$dir/client.crt" -X "ssl.key.location=$dir/client.key")
	n=1000
	log="$dir/kcat-produce.log"
	if seq 1 "$n" | sed 's/^/k:v/' | tmo kcat -P -b "127.0.0.1:$port" "${tls[@]}" -t ssl -K: -X acks=all >"$log" 2>&1 &&
		tmo kcat -C -b "127.0.0.1:$port" "${tls[@]}" -t ssl -o beginning -e -q -f '%s\n' >"$dir/kcat.out" 2>"$log" &&
		[[ $(sort -u "$dir/kcat.out" | wc -l) == "$n" && $(wc -l <"$dir/kcat.out") == "$n" ]]; then
		ok "kcat produces and consumes $n records over SSL as User:interop-client (a client certificate, ACLs)"
	else
		fail "kcat over SSL with a client certificate" "$log"
	fi
	log="$dir/kafka-python.log"
	if (cd / && tmo $py - "127.0.0.1:$port" "$dir" "$n" >"$log" 2>&1 <<-'PY'); then
		import sys
		from kafka import KafkaConsumer
		bootstrap, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
		c = KafkaConsumer("ssl", bootstrap_servers=bootstrap, security_protocol="SSL",
		                  ssl_cafile=d + "/ca.pem", ssl_certfile=d + "/client.crt", ssl_keyfile=d + "/client.key",
		                  group_id="interop-ssl", auto_offset_reset="earliest", consumer_timeout_ms=10000)
		values = []
		for r in c:
		    values.append(int(r.value[1:]))
		    if len(values) == n:
		        break
		c.commit()
		c.close()
		values.sort()
		assert values == list(range(1, n + 1)), (len(values), values[:5])
		print("read", len(values))
		PY
		ok "kafka-python reads the $n records over SSL in group interop-ssl and commits (client certificate, ACLs)"
	else
		fail "kafka-python over SSL with a client certificate in group interop-ssl" "$log"
	fi
	log="$dir/kcat-nocert.log"
	if tmo kcat -L -m 5 -b "127.0.0.1:$port" -X security.protocol=ssl -X "ssl.ca.location=$dir/ca.pem" >"$log" 2>&1; then
		fail "kcat without a client certificate was served" "$log"
	else
		ok "kcat without a client certificate is refused"
	fi
	sasl_ssl_steps "$dir" "$port" "$sport"
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	single_pid=""
}

# sasl_ssl_steps DIR SSL_PORT SASL_SSL_PORT: the SCRAM part of ssl_steps.
sasl_ssl_steps() {
	local dir=$1 port=$2 sport=$3 log n=200 m
	tag="[1 node, SASL_SSL]"
	log="$dir/user.log"
	local -a admin=(--bootstrap-server "127.0.0.1:$port" --tls-truststore "$dir/ca.pem"
		--tls-cert "$dir/admin.crt" --tls-key "$dir/admin.key")
	if ! { tmo "$wren" user create "${admin[@]}" --mechanism SCRAM-SHA-512 --password interop-pw device-1 &&
		tmo "$wren" user create "${admin[@]}" --mechanism SCRAM-SHA-256 --password interop-pw device-1 &&
		tmo "$wren" user create "${admin[@]}" --mechanism SCRAM-SHA-256 --password interop-pw device-2 &&
		tmo "$wren" user list "${admin[@]}"; } >"$log" 2>&1; then
		fail "wren user create over SSL" "$log"
		return 0
	fi
	ok "wren user create makes a SCRAM-SHA-512 and a SCRAM-SHA-256 credential"
	log="$dir/java-sasl.log"
	if [[ $java_ok != 1 ]]; then
		skip "java over SASL_SSL (the Java client did not build)"
		return 0
	fi
	cat >"$dir/java-sasl.properties" <<-EOF
		security.protocol=SASL_SSL
		sasl.mechanism=SCRAM-SHA-512
		sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="device-1" password="interop-pw";
		ssl.truststore.type=PEM
		ssl.truststore.location=$dir/ca.pem
	EOF
	$py "$pydir/records.py" gen sasl "$n" >"$dir/java-sasl.expected"
	if WREN_INTEROP_CLIENT_PROPERTIES="$dir/java-sasl.properties" tmo java -cp "$java_cp" wren.interop.Interop \
		produce "127.0.0.1:$sport" sasl none "$dir/java-sasl.expected" "$client_timeout" >"$log" 2>&1; then
		ok "the Java client produces $n records over SASL_SSL with SCRAM-SHA-512 (idempotent, WRITE on the topic)"
	else
		fail "the Java client over SASL_SSL with SCRAM-SHA-512" "$log"
	fi
	log="$dir/kafka-python-sasl.log"
	if (cd / && tmo $py - "127.0.0.1:$sport" "$dir" "$n" >"$log" 2>&1 <<-'PY'); then
		import sys
		from kafka import KafkaConsumer
		bootstrap, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
		c = KafkaConsumer("sasl", bootstrap_servers=bootstrap, security_protocol="SASL_SSL",
		                  ssl_cafile=d + "/ca.pem", sasl_mechanism="SCRAM-SHA-256",
		                  sasl_plain_username="device-1", sasl_plain_password="interop-pw",
		                  group_id="interop-sasl", auto_offset_reset="earliest", consumer_timeout_ms=10000)
		values = [r.value for _, r in zip(range(n), c)]
		c.commit()
		c.close()
		assert len(values) == n, (len(values), values[:5])
		print("read", len(values))
		PY
		ok "kafka-python reads the $n records over SASL_SSL with SCRAM-SHA-256 in group interop-sasl and commits"
	else
		fail "kafka-python over SASL_SSL with SCRAM-SHA-256 in group interop-sasl" "$log"
	fi
	local -a plain=(-X security.protocol=sasl_ssl -X "ssl.ca.location=$dir/ca.pem"
		-X sasl.mechanisms=PLAIN -X sasl.username=device-1)
	log="$dir/kcat-plain.log"
	if tmo kcat -C -b "127.0.0.1:$sport" "${plain[@]}" -X sasl.password=interop-pw -t sasl -o beginning -e -q \
		-f '%s\n' >"$dir/kcat-plain.out" 2>"$log" && [[ $(wc -l <"$dir/kcat-plain.out") == "$n" ]]; then
		ok "kcat reads the $n records over SASL_SSL with PLAIN against the SCRAM credential"
	else
		fail "kcat over SASL_SSL with PLAIN" "$log"
	fi
	log="$dir/kcat-sasl-wrong.log"
	if tmo kcat -L -m 5 -b "127.0.0.1:$sport" "${plain[@]}" -X sasl.password=wrong >"$log" 2>&1; then
		fail "kcat with a wrong password was served" "$log"
	else
		ok "kcat with a wrong password is refused"
	fi
	# device-2 authenticates but no ACL grants it anything: its produce is refused per topic.
	log="$dir/kcat-noacl.log"
	if ! echo refused | tmo kcat -P -b "127.0.0.1:$sport" -X security.protocol=sasl_ssl -X "ssl.ca.location=$dir/ca.pem" \
		-X sasl.mechanisms=PLAIN -X sasl.username=device-2 -X sasl.password=interop-pw -t sasl -X message.timeout.ms=10000 \
		>"$log" 2>&1 && grep -qi 'topic authorization failed' "$log"; then
		ok "kcat as User:device-2 (no ACL) is refused with a topic authorization error ($(grep -io -m1 'topic authorization failed' "$log"))"
	else
		fail "kcat as User:device-2 (no ACL) is not refused with a topic authorization error" "$log"
	fi
}

# ---- the cluster over SASL_SSL, and Kafka's own admin tools ------------------------------------

# make_ca_broker DIR: a CA (ca.pem, ca.key) and the broker's certificate for 127.0.0.1 with its
# key (broker.pem), made with openssl in DIR.
make_ca_broker() {
	(
		cd "$1"
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
			-subj "/CN=wren interop CA" -keyout ca.key -out ca.pem
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
			-keyout broker.key -out broker.csr
		openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
			-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n') -out broker.crt
		cat broker.crt broker.key >broker.pem
	)
}

# cluster_configure CONF (called by start_cluster): each node gets a SASL_SSL listener beside its
# PLAINTEXT one, on its client port + 3, taking SCRAM users. A SASL listener makes
# allow.everyone.if.no.acl.found false, so the anonymous PLAINTEXT clients of every other check
# are super users (User:ANONYMOUS) while the SCRAM user may do only what its ACLs grant.
cluster_sasl=0
cluster_configure() {
	local conf=$1 n p dir="$work/cluster-tls"
	mkdir -p "$dir"
	if ! make_ca_broker "$dir" >"$dir/openssl.log" 2>&1; then
		echo "interop: openssl could not make the cluster's certificates; no SASL_SSL listeners" >&2
		return 0
	fi
	for n in 1 2 3; do
		p=$((base_port + 10 * n))
		sed -i "s|^listeners = \[\"PLAINTEXT://127.0.0.1:$p\", |listeners = [\"PLAINTEXT://127.0.0.1:$p\", \"SASL_SSL://127.0.0.1:$((p + 3))\", |" "$conf"
	done
	sed -i '/^listeners = \["PLAINTEXT/a sasl.enabled.mechanisms = ["SCRAM-SHA-512", "SCRAM-SHA-256"]' "$conf"
	cat >>"$conf" <<-EOF

		[security]
		ssl.keystore.location = "$dir/broker.pem"
		super.users = ["User:ANONYMOUS"]
	EOF
	cluster_sasl=1
}

# kafka_tool NAME CLASS ARGS...: one of Apache Kafka's command-line tools (kafka_libs, fetched
# by scripts/kafka-fetch.sh), with its quiet logging.
kafka_tool() {
	local name=$1
	shift
	echo "\$ $name $*"
	# C1 only: a tool runs for about a second, which JIT compiling at C2 would double.
	tmo java -XX:TieredStopAtLevel=1 -cp "$kafka_libs/*" -Dlog4j2.configurationFile="$kafka_libs/../config/log4j2.yaml" "$@"
}
kafka_configs() { kafka_tool kafka-configs kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" "$@"; }
kafka_acls() { kafka_tool kafka-acls org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" "$@"; }

# admin_tool_steps: Kafka's kafka-configs (kafka.admin.ConfigCommand) and kafka-acls
# (org.apache.kafka.tools.AclCommand) against the cluster, bootstrapped from the node that is
# not the controller: SCRAM credentials and client quotas altered and described, ACLs added,
# listed and removed. The SCRAM user and its ACLs are those sasl_cluster_steps then uses.
admin_tool_steps() {
	local log="$work/$target/kafka-tools.log" user=interop-sasl out scram
	: >"$log"
	if ! kafka_libs=$("$root/scripts/kafka-fetch.sh" 2>>"$log"); then
		skip "kafka-configs and kafka-acls (scripts/kafka-fetch.sh could not fetch Apache Kafka: see $log)"
		return 1
	fi
	# One user per request: Kafka (and wren) refuse a request naming a user twice, whatever the
	# mechanisms, as DUPLICATE_RESOURCE.
	if { kafka_configs --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=interop-pw]' --entity-type users --entity-name "$user" &&
		kafka_configs --alter --add-config 'SCRAM-SHA-512=[password=interop-pw]' --entity-type users --entity-name "$user" &&
		kafka_configs --alter --add-config producer_byte_rate=1048576 --entity-type users --entity-name "$user" &&
		kafka_configs --alter --add-config producer_byte_rate=1048576 --entity-type clients --entity-name interop-quota; } >>"$log" 2>&1; then
		ok "kafka-configs --alter: SCRAM-SHA-256 (8192 iterations) and SCRAM-SHA-512 credentials of user $user, producer_byte_rate of user $user and client interop-quota"
	else
		fail "kafka-configs --alter (SCRAM credentials, quotas)" "$log"
	fi
	out="$work/$target/kafka-configs-describe.out"
	if { kafka_configs --describe --entity-type users --entity-name "$user" &&
		kafka_configs --describe --entity-type clients --entity-name interop-quota; } >"$out" 2>&1 &&
		grep -q "^Quota configs for user-principal '$user' are producer_byte_rate=1048576.0$" "$out" &&
		scram=$(grep "^SCRAM credential configs for user-principal '$user' are " "$out" | sed 's/.* are //; s/ //g') &&
		[[ ",$scram," == *,SCRAM-SHA-256=iterations=8192,* && ",$scram," == *,SCRAM-SHA-512=iterations=4096,* ]] &&
		grep -q "^Quota configs for client-id 'interop-quota' are producer_byte_rate=1048576.0$" "$out"; then
		ok "kafka-configs --describe shows the user's quota and SCRAM-SHA-256=iterations=8192,SCRAM-SHA-512=iterations=4096, and the client's quota"
	else
		cat "$out" >>"$log"
		fail "kafka-configs --describe does not show the quotas and SCRAM credentials just set" "$log"
	fi
	out="$work/$target/kafka-acls.out"
	if { kafka_acls --add --allow-principal User:interop-acl --operation Read --topic interop-acl &&
		kafka_acls --list --topic interop-acl; } >"$out" 2>&1 &&
		grep -q 'principal=User:interop-acl, host=\*, operation=READ, permissionType=ALLOW' <(sed -n '/^Current ACLs/,$p' "$out"); then
		ok "kafka-acls --add, then --list shows User:interop-acl READ on topic interop-acl"
	else
		cat "$out" >>"$log"
		fail "kafka-acls --add, --list" "$log"
	fi
	if { kafka_acls --remove --force --allow-principal User:interop-acl --operation Read --topic interop-acl &&
		kafka_acls --list --topic interop-acl; } >"$out" 2>&1 && ! grep -q 'User:interop-acl' <(grep -v '^\$ ' "$out"); then
		ok "kafka-acls --remove --force, then --list shows no ACL on topic interop-acl"
	else
		cat "$out" >>"$log"
		fail "kafka-acls --remove --force, --list" "$log"
	fi
	if { kafka_acls --add --allow-principal "User:$user" --operation Write --operation Read --operation Describe \
		--topic interop-sasl- --resource-pattern-type prefixed &&
		kafka_acls --add --allow-principal "User:$user" --operation Read --group interop-sasl- --resource-pattern-type prefixed; } >>"$log" 2>&1; then
		ok "kafka-acls --add grants User:$user WRITE, READ, DESCRIBE on topics and READ on groups prefixed interop-sasl-"
	else
		fail "kafka-acls --add for User:$user" "$log"
		return 1
	fi
}

# sasl_cluster_steps: through the SASL_SSL listener of the node that is not the controller, with
# the SCRAM user admin_tool_steps made and granted: the Java client produces with SCRAM-SHA-512
# and reads back by assignment; kafka-python produces and reads in a group with SCRAM-SHA-256.
sasl_cluster_steps() {
	local dir="$work/cluster-tls" sboot="127.0.0.1:$((base_port + 10 * boot_node + 3))" log n=1000 topic
	if [[ $java_ok == 1 ]]; then
		topic=interop-sasl-java log="$work/$target/java-sasl.log"
		cat >"$work/$target/java-sasl.properties" <<-EOF
			security.protocol=SASL_SSL
			sasl.mechanism=SCRAM-SHA-512
			sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="interop-sasl" password="interop-pw";
			ssl.truststore.type=PEM
			ssl.truststore.location=$dir/ca.pem
		EOF
		$py "$pydir/records.py" gen "$topic" "$n" >"$work/$target/$topic.tsv"
		if create_topic "$topic" 3 "$log" &&
			WREN_INTEROP_CLIENT_PROPERTIES="$work/$target/java-sasl.properties" tmo java -cp "$java_cp" wren.interop.Interop \
				produce "$sboot" "$topic" zstd "$work/$target/$topic.tsv" "$client_timeout" >>"$log" 2>&1 &&
			WREN_INTEROP_CLIENT_PROPERTIES="$work/$target/java-sasl.properties" tmo java -cp "$java_cp" wren.interop.Interop \
				consume "$sboot" "$topic" "$work/$target/$topic.dump" "$client_timeout" >>"$log" 2>&1 &&
			$py "$pydir/records.py" check "$work/$target/$topic.tsv" "$work/$target/$topic.dump" >>"$log" 2>&1; then
			ok "the Java client produces and reads back $n records over SASL_SSL with SCRAM-SHA-512 (node $boot_node, ACLs)"
		else
			fail "the Java client over SASL_SSL with SCRAM-SHA-512 (node $boot_node)" "$log"
		fi
	else
		skip "java over SASL_SSL (the Java client did not build)"
	fi
	topic=interop-sasl-python log="$work/$target/kafka-python-sasl.log"
	if create_topic "$topic" 3 "$log" &&
		(cd / && tmo $py - "$sboot" "$dir/ca.pem" "$topic" "$n" >>"$log" 2>&1 <<-'PY'); then
		import sys
		from kafka import KafkaConsumer, KafkaProducer
		bootstrap, ca, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
		sec = dict(bootstrap_servers=bootstrap, security_protocol="SASL_SSL", ssl_cafile=ca,
		           sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="interop-sasl", sasl_plain_password="interop-pw")
		p = KafkaProducer(acks="all", **sec)
		for i in range(n):
		    p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
		p.flush(60)
		p.close()
		c = KafkaConsumer(topic, group_id="interop-sasl-group", auto_offset_reset="earliest", consumer_timeout_ms=15000, **sec)
		got = {}
		for r in c:
		    got[r.key] = r.value
		    if len(got) == n:
		        break
		c.commit()
		c.close()
		assert got == {b"k%d" % i: b"v%d" % i for i in range(n)}, (len(got), n)
		print("produced and read", n, "in group interop-sasl-group")
		PY
		ok "kafka-python produces $n records and reads them in a group over SASL_SSL with SCRAM-SHA-256 (node $boot_node, ACLs)"
	else
		fail "kafka-python over SASL_SSL with SCRAM-SHA-256 (node $boot_node)" "$log"
	fi
}

for target in $targets; do
	target_up "$target"
	mkdir -p "$work/$target"
	produced=()
	step_started=$SECONDS
	case $target in
	single | cluster)
		tprefix=interop
		client_steps
		if [[ $target == cluster ]]; then
			admin_steps_started=$SECONDS
			if admin_tool_steps; then
				if [[ $cluster_sasl == 1 ]]; then
					sasl_cluster_steps
				else
					skip "clients over SASL_SSL (the cluster has no SASL_SSL listener)"
				fi
			fi
			echo "interop: $tag Kafka's tools and SASL_SSL took $((SECONDS - admin_steps_started)) s"
		fi
		;;
	kill)
		tprefix=interop-kill
		fault_steps
		;;
	esac
	if ! target_alive; then
		fail "a node exited during the run" "$(node_logs | head -n 1)"
	fi
	echo "interop: $tag took $((SECONDS - step_started)) s"
	[[ $target == cluster ]] || target_down
done
target_down
if [[ ${WREN_INTEROP_SSL:-1} != 0 ]]; then
	step_started=$SECONDS
	ssl_steps
	echo "interop: $tag took $((SECONDS - step_started)) s"
fi

interop_finish
