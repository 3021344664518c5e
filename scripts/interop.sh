#!/usr/bin/env bash
# interop.sh: wren against Kafka clients that nobody here wrote.
#
# Builds wren, starts one broker on free loopback ports with a temporary data directory, and
# for each client (kcat and confluent-kafka on librdkafka, kafka-python, Apache Kafka's Java
# client) produces records with every compression codec the client has, then consumes them
# back with the same client and compares: count, keys, values, headers, offsets and order per
# partition. A few cross-reads check that one client reads what another wrote.
#
# Usage: scripts/interop.sh            (as root on Debian 12, or with the packages installed)
#
# Prints one line per check, "ok   ...", "FAIL ..." or "skip ... (why)", then
# "N passed, N failed"; exits non-zero if any check failed. On failure the client's output
# and the tail of the broker's log follow the FAIL line, and the work directory is kept.
#
# Installs when missing: Debian's kcat, python3-confluent-kafka, python3-kafka (librdkafka
# 2.0.2 behind the first two; kafka-python 2.0.x) and, where Debian has them, python3-snappy,
# python3-lz4 and python3-zstandard (kafka-python's codecs); maven if absent. The Python clients
# run under /usr/bin/python3, where Debian's packages are, whatever python3 is first on PATH.
#
# Environment:
#   WREN_INTEROP_RECORDS   records per check (default 10000)
#   WREN_INTEROP_TIMEOUT   seconds one client command may take (default 120)
#   WREN_INTEROP_KEEP      1: keep the work directory even when everything passed
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
records="${WREN_INTEROP_RECORDS:-10000}"
client_timeout="${WREN_INTEROP_TIMEOUT:-120}"
codecs=(none gzip snappy lz4 zstd)
py=/usr/bin/python3
# The client scripts import records.py: leave no __pycache__ in the checkout.
export PYTHONDONTWRITEBYTECODE=1
pydir="$root/interop/python"
started=$SECONDS

passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
skip() { printf 'skip %s\n' "$*"; }
# fail LINE [LOG]: count a failure and show the evidence under it.
fail() {
	failed=$((failed + 1))
	printf 'FAIL %s\n' "$1"
	if [[ -n "${2:-}" && -s "$2" ]]; then
		tail -n 25 "$2" | sed 's/^/     | /'
	fi
}

# ---- work directory ------------------------------------------------------------------------

work="$(mktemp -d "${TMPDIR:-/tmp}/wren-interop.XXXXXX")"
mkdir -p "$work/logs" "$work/data"
wren_pid=""
finished=0
# cleanup stops wren and removes the work directory unless something failed. A run stopped
# early (set -e: a build failed, wren did not start) still ends with the summary line.
cleanup() {
	local rc=$?
	if [[ $finished == 0 ]]; then
		failed=$((failed + 1))
		printf 'FAIL interop.sh stopped early (exit status %s)\n' "$rc"
		[[ -s $work/logs/wren.log ]] && tail -n 25 "$work/logs/wren.log" | sed 's/^/     | /'
		echo "interop: work directory kept: $work"
		echo "$passed passed, $failed failed"
		rc=1
	fi
	if [[ -n $wren_pid ]] && kill -0 "$wren_pid" 2>/dev/null; then
		kill -TERM "$wren_pid" 2>/dev/null || true
		# wren exits in well under a second on SIGTERM; KILL it if it does not within 15 s.
		local deadline=$((SECONDS + 15))
		while kill -0 "$wren_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		kill -KILL "$wren_pid" 2>/dev/null || true
		wait "$wren_pid" 2>/dev/null || true
	fi
	if [[ $rc == 0 && $failed == 0 && ${WREN_INTEROP_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT

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

# ---- broker ------------------------------------------------------------------------------

echo "interop: building wren"
(cd "$root" && go build -o "$work/wren" .)
wren="$work/wren"

# free_port prints a loopback TCP port nothing listens on (the kernel picks it). Another
# process may take it before wren binds: start_wren then sees wren exit and tries new ports.
free_port() {
	$py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_wren() {
	local attempt port ctl deadline
	for attempt in 1 2 3; do
		port=$(free_port)
		ctl=$(free_port)
		cat >"$work/wren.toml" <<-EOF
			[broker]
			node.id = 1
			log.dirs = ["$work/data"]
			listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$ctl"]

			[cluster]
			controller.quorum.voters = ["1@127.0.0.1:$ctl"]

			[topics]
			auto.create.topics.enable = false

			[http]
			listen = ""
		EOF
		"$wren" serve --config "$work/wren.toml" >"$work/logs/wren.log" 2>&1 &
		wren_pid=$!
		deadline=$((SECONDS + 30))
		while ((SECONDS < deadline)); do
			if ! kill -0 "$wren_pid" 2>/dev/null; then
				break
			fi
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				bootstrap="127.0.0.1:$port"
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$wren_pid" 2>/dev/null; then
			echo "interop: wren did not accept connections on 127.0.0.1:$port within 30 s" >&2
			tail -n 25 "$work/logs/wren.log" >&2
			return 1
		fi
		wait "$wren_pid" 2>/dev/null || true
		wren_pid=""
		echo "interop: wren exited at start (attempt $attempt):" >&2
		tail -n 5 "$work/logs/wren.log" >&2
	done
	return 1
}

bootstrap=""
start_wren
echo "interop: wren $bootstrap, data $work/data"

# ---- Java client build ---------------------------------------------------------------------

java_ok=1
echo "interop: building the Java client (Maven)"
if mvn -q -B -f "$root/interop/java/pom.xml" -Dinterop.build.dir="$work/java" package >"$work/logs/maven.log" 2>&1; then
	jars=("$work/java/lib"/kafka-clients-*.jar)
	version=${jars[0]##*/kafka-clients-}
	ok "java client build (kafka-clients ${version%.jar})"
else
	fail "java client build" "$work/logs/maven.log"
	java_ok=0
fi
java_cp="$work/java/classes:$work/java/lib/*"

# ---- clients -------------------------------------------------------------------------------
# Each client has produce_C TOPIC CODEC EXPECTED and consume_C TOPIC DUMP; output goes to the
# caller's log. A client command that outlives client_timeout fails its check.

tmo() { timeout --kill-after=10 "$client_timeout" "$@"; }

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

# Topics whose records were produced and read back intact, for the cross-reads.
declare -A produced=()

# batches_on_disk TOPIC CODEC: read TOPIC's segments with wren dump-log and require every batch
# to be magic 2, valid and compressed with CODEC, so that a client that quietly falls back to
# no compression (librdkafka drops a codec when ApiVersions does not suit it) fails. Prints
# the batch count, or the first offending batch.
batches_on_disk() {
	local segs=("$work/data/$1"-[0-9]*/*.log)
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

# roundtrip CLIENT CODEC: create interop-CLIENT-CODEC, produce, consume with the same client,
# compare.
roundtrip() {
	local client=$1 codec=$2
	local topic="interop-$client-$codec" exp="$work/$client-$codec.tsv" dump="$work/$client-$codec.dump"
	local log="$work/logs/$client-$codec.log"
	if ! "$wren" topic create "$topic" -p 3 -b "$bootstrap" >"$log" 2>&1; then
		fail "$client $codec: wren topic create $topic" "$log"
		return
	fi
	"expected_$client" "$topic" >"$exp"
	if ! "produce_$client" "$topic" "$codec" "$exp" >>"$log" 2>&1; then
		fail "$client $codec: produce $records records" "$log"
		return
	fi
	local batches
	if ! batches=$(batches_on_disk "$topic" "$codec" 2>&1); then
		echo "$batches" >>"$log"
		fail "$client $codec: batches on disk are not all $codec" "$log"
		return
	fi
	if ! "consume_$client" "$topic" "$dump" >>"$log" 2>&1; then
		fail "$client $codec: consume" "$log"
		return
	fi
	if ! $py "$pydir/records.py" check "$exp" "$dump" >>"$log" 2>&1; then
		fail "$client $codec: records read back differ from those produced" "$log"
		return
	fi
	produced[$client-$codec]=1
	ok "$client $codec $records records ($(tail -n 1 "$log"), $batches)"
}

# crossread READER WRITER CODEC: READER consumes what WRITER produced with CODEC.
crossread() {
	local reader=$1 writer=$2 codec=$3
	local topic="interop-$writer-$codec" exp="$work/$writer-$codec.tsv" dump="$work/$reader-reads-$writer-$codec.dump"
	local log="$work/logs/$reader-reads-$writer-$codec.log"
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

# ---- kcat ----------------------------------------------------------------------------------

kcat_features=$(kcat -V 2>&1 | sed -n 's/.*builtin\.features=\([^ )]*\).*/\1/p')
for codec in "${codecs[@]}"; do
	if [[ $codec != none && ",$kcat_features," != *",$codec,"* ]]; then
		skip "kcat $codec (librdkafka built without it: builtin.features=$kcat_features)"
		continue
	fi
	roundtrip kcat "$codec"
done

# kcat -L must list a topic with its partitions and their leader.
log="$work/logs/kcat-metadata.log"
if tmo kcat -L -b "$bootstrap" -t interop-kcat-none >"$log" 2>&1 &&
	grep -q '^  topic "interop-kcat-none" with 3 partitions:$' "$log" &&
	[[ $(grep -c '^    partition [0-2], leader 1, replicas: 1, isrs: 1$' "$log") == 3 ]]; then
	ok "kcat -L lists interop-kcat-none with 3 partitions led by broker 1"
else
	fail "kcat -L does not list interop-kcat-none with 3 partitions led by broker 1" "$log"
fi

# ---- confluent-kafka (Python) --------------------------------------------------------------

for codec in "${codecs[@]}"; do
	roundtrip confluent "$codec"
done

# A transactional producer must fail at once with a fatal error that says why: wren has no
# transaction coordinator.
log="$work/logs/confluent-transactions.log"
if tmo $py "$pydir/confluent_client.py" transactions "$bootstrap" >"$log" 2>&1; then
	ok "confluent init_transactions refused at once ($(grep -m1 '^init_transactions' "$log"))"
else
	fail "confluent init_transactions is not refused at once with 'transactions are not supported by wren'" "$log"
fi

# ---- kafka-python --------------------------------------------------------------------------

kp_codecs="$work/logs/kafka-python-codecs.log"
if ! $py "$pydir/kafka_python_client.py" codecs >"$kp_codecs" 2>&1; then
	fail "kafka-python: the client does not load" "$kp_codecs"
fi
for codec in "${codecs[@]}"; do
	line=$(grep "^$codec " "$kp_codecs" || true)
	if [[ -z $line ]]; then
		skip "kafka-python $codec (the client does not load)"
		continue
	elif [[ $line != "$codec ok" ]]; then
		skip "kafka-python $codec (${line#"$codec "})"
		continue
	fi
	roundtrip kafka-python "$codec"
done

# ---- Java ----------------------------------------------------------------------------------

for codec in "${codecs[@]}"; do
	if [[ $java_ok == 1 ]]; then
		roundtrip java "$codec"
	else
		skip "java $codec (the Java client did not build)"
	fi
done

# ---- the checker can fail -------------------------------------------------------------------
# records.py check must reject damaged copies of a dump it accepted (lost, duplicated, swapped,
# renumbered, altered records), or every "ok" above would mean nothing.

selftest_done=0
for t in kcat-none java-none confluent-none kafka-python-none; do
	if [[ -n ${produced[$t]:-} ]]; then
		log="$work/logs/selftest.log"
		if $py "$pydir/records.py" selftest "$work/$t.tsv" "$work/$t.dump" >"$log" 2>&1; then
			ok "checker rejects damaged copies of the $t dump ($(tail -n 1 "$log"))"
		else
			fail "checker self-test on the $t dump" "$log"
		fi
		selftest_done=1
		break
	fi
done
[[ $selftest_done == 1 ]] || skip "checker self-test (no intact dump to damage)"

# ---- cross-reads: each client reads another's compression ----------------------------------

crossread java kcat zstd
crossread kcat java snappy
crossread confluent kafka-python lz4
crossread kafka-python java zstd
crossread kafka-python confluent gzip

# ---- summary -------------------------------------------------------------------------------

if ! kill -0 "$wren_pid" 2>/dev/null; then
	fail "wren exited during the run" "$work/logs/wren.log"
elif [[ $failed -gt 0 ]]; then
	echo "interop: tail of the broker's log:"
	tail -n 25 "$work/logs/wren.log" | sed 's/^/     | /'
fi
echo "interop: took $((SECONDS - started)) s"
if [[ $failed -gt 0 || ${WREN_INTEROP_KEEP:-0} == 1 ]]; then
	echo "interop: work directory kept: $work"
fi
finished=1
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
