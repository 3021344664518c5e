#!/usr/bin/env bash
# bench-tls.sh: throughput and broker CPU over TLS. With one client, `wren
# perf produce` (1 KiB records, acks=all, one partition) and then `wren perf
# consume` of the same records, it measures in turn wren over PLAINTEXT,
# wren over SSL, Apache Kafka 4.x over PLAINTEXT and Kafka over SSL. wren runs
# its default flush policy, ack (fdatasync before the acknowledgement); Kafka
# runs with log.flush.interval.messages=1, which fsyncs every append, so both
# acknowledge only what is on disk. One broker runs at a time.
# Every measured run gets a broker started afresh on an empty data directory
# (with both listeners; the run uses one), removed when it stops: on a virtual
# machine, writing into page cache that no run has freed just before can cost
# several times as much CPU as reusing pages, and a second run on one broker
# would pay that where the first did not. Before each measured run an
# unmeasured warm-up (a tenth of the records, at most 20000) on a topic of its
# own warms the JIT and the code paths alike.
#
# The goals it checks (they are printed, not enforced): wren SSL at 0.7x or
# more of wren PLAINTEXT (sendfile is lost under TLS, as it is for Kafka), and
# at 2x or more of Kafka SSL.
#
# Usage: scripts/bench-tls.sh [NUM_RECORDS]   (default 200000)
#   WREN_BENCH_ROUNDS=4 scripts/bench-tls.sh 1000000   about five minutes on
#   two cores; the figures to quote. At 200000 records a run lasts well under
#   a second for wren, and Kafka's JIT has not settled: read those as a smoke
#   test. On a shared machine quote the load average printed with them.
#
# Environment:
#   WREN_BENCH_ROUNDS=N       rounds (default 1); each round runs all four,
#                             PLAINTEXT first in odd rounds and SSL first in
#                             even ones; the summary takes the median of the
#                             rounds (an even count balances the order)
#   WREN_BENCH_SKIP_KAFKA=1   measure wren alone
#   WREN_BENCH_PROFILE=DIR    also record a CPU profile of wren during each
#                             of its measured runs (Linux perf, 999 Hz, call
#                             graphs) into DIR, with the top symbols of each
#                             in a .txt beside it; needs perf(1)
#   WREN_KAFKA_VERSION, WREN_KAFKA_HOME, WREN_KAFKA_HEAP_OPTS
#                             as for kafka-run.sh
#
# Prints: the load average before and after, the negotiated TLS version and
# cipher suite of each SSL listener (as openssl s_client sees it, offering
# Go's TLS 1.3 order), then one line per run: MB/s and records/s as the
# client measured them, produce p50/p99 latency, the broker's CPU seconds during the run (utime+stime from
# /proc/PID/stat, before and after) and its CPU seconds per GiB of record
# values moved, and the client's CPU seconds; then a table of the medians
# and the ratios wren SSL / wren PLAINTEXT, wren SSL / Kafka SSL and broker
# CPU per GiB, wren SSL against Kafka SSL, for produce and for consume.
#
# Certificates: a throwaway CA and a broker certificate for 127.0.0.1, ECDSA
# P-256, made with openssl in a temporary directory. Both brokers read the
# same PEM file, the chain and then the unencrypted PKCS#8 key: wren as its
# ssl.keystore.location, Kafka with ssl.keystore.type=PEM (KIP-651; Kafka
# 4.x takes an unencrypted key without ssl.key.password).
#
# Needs: go, openssl, python3; java 17 and mvn for Kafka (kafka-fetch.sh).
# Everything listens on random free loopback ports and is removed on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
n="${1:-200000}"
rounds="${WREN_BENCH_ROUNDS:-1}"
profile="${WREN_BENCH_PROFILE:-}"
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tls: NUM_RECORDS must be a positive integer, got $n" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tls: WREN_BENCH_ROUNDS must be a positive integer" >&2; exit 2; }
for tool in go openssl python3; do
	command -v "$tool" >/dev/null || { echo "bench-tls: $tool not found on PATH" >&2; exit 1; }
done
if [[ -n "$profile" ]]; then
	command -v perf >/dev/null || { echo "bench-tls: WREN_BENCH_PROFILE needs perf(1)" >&2; exit 1; }
	mkdir -p "$profile"
	profile="$(cd "$profile" && pwd)"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
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
		((SECONDS < end)) || { echo "bench-tls: nothing listens on $1:$2" >&2; return 1; }
		sleep 0.01
	done
}

# ---- certificates ----
certs="$work/certs"
mkdir -p "$certs"
(
	cd "$certs"
	openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
	openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=wren bench CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out ca.pem 2>/dev/null
	openssl ecparam -name prime256v1 -genkey -noout -out broker.ec.key 2>/dev/null
	openssl pkcs8 -topk8 -nocrypt -in broker.ec.key -out broker.key
	openssl req -new -key broker.key -subj "/CN=127.0.0.1" -out broker.csr 2>/dev/null
	printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth" \
		"keyUsage=critical,digitalSignature" "basicConstraints=CA:FALSE" >broker.ext
	openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -sha256 \
		-extfile broker.ext -out broker.crt 2>/dev/null
	cat broker.crt ca.pem broker.key >broker.pem # the chain, then the key
)

# ---- measuring ----
clk_tck=$(getconf CLK_TCK)
# cpu_ticks prints utime+stime of PID in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# json_field FILE KEY prints one number from a perf command's JSON output.
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

results="$work/results.tsv" # system proto op round mbps recps p50 p99 broker_cpu_s cpu_per_gib client_cpu_s
: >"$results"
gib=$(awk -v n="$n" 'BEGIN {print n * 1024 / 1073741824}')

# client OUTFILE CPUFILE cmd...: runs the client, its JSON to OUTFILE, its
# user+system CPU seconds to CPUFILE.
client() {
	local out="$1" cpuf="$2"
	shift 2
	local TIMEFORMAT='%U %S'
	{ time "$@" >"$out" 2>"$out.err"; } 2>"$cpuf.raw" || {
		echo "bench-tls: client failed: $*" >&2
		cat "$out.err" >&2
		return 1
	}
	awk '{print $1 + $2}' "$cpuf.raw" >"$cpuf"
}

# warm_up BOOTSTRAP [tls flags...]: an unmeasured produce and consume of a
# tenth of the records (at most 20000) on a topic of its own, so that the
# measured runs meet a warmed JIT, connection and page cache on every system.
warm_up() {
	local boot="$1" topic="tls-bench-warmup-$RANDOM" w=$((n / 10 < 20000 ? n / 10 : 20000))
	shift
	((w > 0)) || return 0
	"$wren" perf produce -b "$boot" --topic "$topic" --num-records "$w" --record-size 1024 --acks all \
		--partitions 1 --reporting-interval 1h --timeout 60s --format json "$@" >/dev/null 2>"$work/warmup.err" &&
		"$wren" perf consume -b "$boot" --topic "$topic" --num-records "$w" --timeout 30s \
			--reporting-interval 1h --format json "$@" >/dev/null 2>>"$work/warmup.err" || {
		echo "bench-tls: warm-up against $boot failed" >&2
		cat "$work/warmup.err" >&2
		return 1
	}
}

# start_profile FILE PID starts perf record on PID with its events disabled
# and enables them through perf's control FIFO, waiting (10 s at most) for
# perf's acknowledgement, so that the profile covers the whole run however
# long perf takes to attach. Sets profile_pid.
start_profile() {
	rm -f "$work/perf.ctl" "$work/perf.ack"
	mkfifo "$work/perf.ctl" "$work/perf.ack"
	perf record -F 999 -g -D -1 --control "fifo:$work/perf.ctl,$work/perf.ack" -p "$2" -o "$1" \
		>"$work/perf.log" 2>&1 &
	profile_pid=$!
	# Opened read-write, a FIFO does not block waiting for the other end.
	exec 8<>"$work/perf.ctl" 9<>"$work/perf.ack"
	echo enable >&8
	local ack=""
	read -r -t 10 ack <&9 || true
	exec 8>&- 9>&-
	if [[ $ack != ack ]]; then
		cat "$work/perf.log" >&2
		echo "bench-tls: perf record did not start profiling within 10 s" >&2
		return 1
	fi
}

# run_one SYSTEM PROTO BOOTSTRAP PID ROUND [tls flags...]
run_one() {
	local sys="$1" proto="$2" boot="$3" pid="$4" round="$5"
	shift 5
	warm_up "$boot" "$@"
	local topic="tls-bench-$proto-$round-$RANDOM" op c0 c1 cpu rec perfpid=""
	for op in produce consume; do
		local args=(-b "$boot" --topic "$topic" --num-records "$n" --format json "$@")
		if [[ $op == produce ]]; then
			args=(perf produce "${args[@]}" --record-size 1024 --throughput -1 --acks all
				--partitions 1 --reporting-interval 1h --timeout 60s)
		else
			args=(perf consume "${args[@]}" --timeout 30s --reporting-interval 1h)
		fi
		if [[ -n "$profile" && $sys == wren ]]; then
			start_profile "$profile/wren-$proto-$op-r$round.data" "$pid"
			perfpid=$profile_pid
		fi
		c0=$(cpu_ticks "$pid")
		client "$work/out.json" "$work/client.cpu" "$wren" "${args[@]}"
		c1=$(cpu_ticks "$pid")
		if [[ -n "$perfpid" ]]; then
			kill -INT "$perfpid" 2>/dev/null || true
			wait "$perfpid" 2>/dev/null || true
			perfpid=""
		fi
		rec=$(json_field "$work/out.json" "$([[ $op == produce ]] && echo records || echo data_consumed_records)")
		if ((rec != n)); then
			echo "bench-tls: $sys $proto $op moved $rec of $n records" >&2
			return 1
		fi
		cpu=$(awk -v a="$c0" -v b="$c1" -v t="$clk_tck" 'BEGIN {printf "%.2f", (b - a) / t}')
		local mbps recps p50=- p99=-
		if [[ $op == produce ]]; then
			mbps=$(json_field "$work/out.json" mb_per_sec)
			recps=$(json_field "$work/out.json" records_per_sec)
			p50=$(json_field "$work/out.json" p50_ms)
			p99=$(json_field "$work/out.json" p99_ms)
		else
			mbps=$(json_field "$work/out.json" mb_per_sec)
			recps=$(json_field "$work/out.json" records_per_sec)
		fi
		printf '%s\t%s\t%s\t%s\t%.2f\t%.0f\t%s\t%s\t%s\t%.2f\t%s\n' "$sys" "$proto" "$op" "$round" \
			"$mbps" "$recps" "$p50" "$p99" "$cpu" "$(awk -v c="$cpu" -v g="$gib" 'BEGIN {print c / g}')" \
			"$(cat "$work/client.cpu")" | tee -a "$results" |
			awk -F'\t' '{lat = $7 == "-" ? "" : sprintf("p50 %.1f ms, p99 %.1f ms; ", $7, $8)
				printf "  %-5s %-9s %-7s %8s MB/s %8s rec/s  %sbroker CPU %s s (%s s/GiB), client CPU %s s\n",
				$1, $2, $3, $5, $6, lat, $9, $10, $11}'
	done
}

# negotiated HOST:PORT prints the TLS version and cipher suite a server picks
# from Go's client order (AES-GCM first on a CPU with AES instructions).
negotiated() {
	local out
	out=$(timeout 10 openssl s_client -connect "$1" -CAfile "$certs/ca.pem" -verify_return_error \
		-ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384 \
		</dev/null 2>/dev/null || true)
	awk '/^New, / {print $2, $NF; found=1} END {if (!found) print "(no handshake)"}' <<<"$out"
}

tls_flags=(--tls-truststore "$certs/ca.pem")

# run_wren ROUND PROTO: one measured run on a wren started afresh on an empty
# data directory, which is removed once it stops.
run_wren() {
	local port sport cport dir="$work/wren-data"
	port=$(free_port); sport=$(free_port); cport=$(free_port)
	rm -rf "$dir"; mkdir -p "$dir"
	cat >"$work/wren.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$dir"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "SSL://127.0.0.1:$sport", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[storage]
log.flush.policy = "ack"
[security]
ssl.keystore.location = "$certs/broker.pem"
[logging]
level = "warn"
TOML
	"$wren" serve --config "$work/wren.toml" &
	local pid=$!
	pids+=("$pid")
	wait_port 127.0.0.1 "$port" 20
	wait_port 127.0.0.1 "$sport" 20
	if [[ $2 == SSL ]]; then
		[[ $1 == 1 ]] && echo "  wren SSL listener: $(negotiated "127.0.0.1:$sport")"
		run_one wren SSL "127.0.0.1:$sport" "$pid" "$1" "${tls_flags[@]}"
	else
		run_one wren PLAINTEXT "127.0.0.1:$port" "$pid" "$1"
	fi
	kill "$pid"; wait "$pid" 2>/dev/null || true
	pids=()
	rm -rf "$dir"
}

# run_kafka ROUND PROTO: the same for Kafka.
run_kafka() {
	local kdir="$work/kafka" bport sport cport
	rm -rf "$kdir"; mkdir -p "$kdir"
	bport=$(free_port); sport=$(free_port); cport=$(free_port)
	# kafka-run.sh keeps the ports it finds in WORKDIR/ports; the SSL
	# listener is added through its later-keys-win extra properties.
	echo "$bport $cport" >"$kdir/ports"
	"$here/kafka-run.sh" start "$kdir" \
		"listeners=PLAINTEXT://127.0.0.1:$bport,SSL://127.0.0.1:$sport,CONTROLLER://127.0.0.1:$cport" \
		"advertised.listeners=PLAINTEXT://127.0.0.1:$bport,SSL://127.0.0.1:$sport" \
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL" \
		"ssl.keystore.type=PEM" "ssl.keystore.location=$certs/broker.pem" \
		"log.flush.interval.messages=1" >/dev/null
	local kpid
	kpid=$(cat "$kdir/kafka.pid")
	wait_port 127.0.0.1 "$sport" 20
	if [[ $2 == SSL ]]; then
		[[ $1 == 1 ]] && echo "  kafka SSL listener: $(negotiated "127.0.0.1:$sport")"
		run_one kafka SSL "127.0.0.1:$sport" "$kpid" "$1" "${tls_flags[@]}"
	else
		run_one kafka PLAINTEXT "127.0.0.1:$bport" "$kpid" "$1"
	fi
	"$here/kafka-run.sh" stop "$kdir" >/dev/null
	rm -rf "$kdir"
}

echo "== $n records of 1 KiB ($(awk -v g="$gib" 'BEGIN {printf "%.3f", g}') GiB), acks=all, 1 partition, wren perf produce then consume; $rounds round(s)"
echo "   $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
	echo "-- round $r"
	order=(PLAINTEXT SSL)
	((r % 2)) || order=(SSL PLAINTEXT)
	for proto in "${order[@]}"; do run_wren "$r" "$proto"; done
	if [[ "${WREN_BENCH_SKIP_KAFKA:-}" != 1 ]]; then
		for proto in "${order[@]}"; do run_kafka "$r" "$proto"; done
	fi
done
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- summary: medians over the rounds, then the ratios ----
awk -F'\t' '
function median(key,   i, j, k, t, a) {
	k = cnt[key]
	for (i = 1; i <= k; i++) a[i] = vals[key, i]
	for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
function add(key, v) { cnt[key]++; vals[key, cnt[key]] = v }
{
	id = $1 " " $2 " " $3; seen[id] = 1
	add(id SUBSEP "mb", $5); add(id SUBSEP "rec", $6); add(id SUBSEP "cpu", $10)
	if ($7 != "-") { add(id SUBSEP "p50", $7); add(id SUBSEP "p99", $8) }
}
function m(id, f) { return ((id SUBSEP f) in cnt) ? median(id SUBSEP f) : "" }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.2fx", a / b) }
END {
	print ""
	printf "%-6s %-10s %-8s %9s %10s %8s %8s %12s\n", "broker", "listener", "op", "MB/s", "records/s", "p50 ms", "p99 ms", "CPU s/GiB"
	split("wren kafka", S, " "); split("PLAINTEXT SSL", P, " "); split("produce consume", O, " ")
	for (s = 1; s <= 2; s++) for (p = 1; p <= 2; p++) for (o = 1; o <= 2; o++) {
		id = S[s] " " P[p] " " O[o]
		if (!(id in seen)) continue
		printf "%-6s %-10s %-8s %9.2f %10.0f %8s %8s %12.2f\n", S[s], P[p], O[o], m(id, "mb"), m(id, "rec"),
			(O[o] == "produce" ? m(id, "p50") : "-"), (O[o] == "produce" ? m(id, "p99") : "-"), m(id, "cpu")
	}
	print ""
	for (o = 1; o <= 2; o++) {
		op = O[o]
		printf "%-8s wren SSL / wren PLAINTEXT: %s (goal >= 0.70x)", op, ratio(m("wren SSL " op, "mb"), m("wren PLAINTEXT " op, "mb"))
		printf "   wren SSL / Kafka SSL: %s (goal >= 2x)", ratio(m("wren SSL " op, "mb"), m("kafka SSL " op, "mb"))
		printf "   CPU/GiB wren SSL / Kafka SSL: %s", ratio(m("wren SSL " op, "cpu"), m("kafka SSL " op, "cpu"))
		printf "   wren SSL CPU/GiB / wren PLAINTEXT: %s\n", ratio(m("wren SSL " op, "cpu"), m("wren PLAINTEXT " op, "cpu"))
	}
}' "$results"

if [[ -n "$profile" ]]; then
	for f in "$profile"/wren-*.data; do
		[[ -f "$f" ]] || continue
		{
			perf report -i "$f" --stdio --header-only 2>/dev/null | grep -E '^# (sample duration|event :)' | cut -c1-80
			perf report -i "$f" --no-children --sort symbol -g none --stdio 2>/dev/null | grep -E '^# Samples|^ +[0-9]' | head -40
			perf report -i "$f" --children --sort symbol -g none --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -60
		} >"${f%.data}.txt" || true
	done
	echo "profiles: $profile (perf report -i FILE; top symbols in the .txt beside each)"
fi
