#!/usr/bin/env bash
# uplink-outage.sh: the time an uplink takes to come back from a long outage. Two wren nodes on
# loopback: the edge, whose link [uplink.outage] forwards topic steady, and the far side (a second
# wren node). It measures:
#
#  1. the backlog of an outage of OUTAGE_S seconds at a steady RATE bytes/s: with the link
#     paused (`wren uplink pause`), OUTAGE_S * RATE bytes of records of RECORD_SIZE bytes are
#     written to the edge with `wren perf produce` as fast as it takes them (faster than real
#     time: the link sees the same backlog, not the same hour; the time it took is printed);
#  2. the return: a producer at a steady RATE bytes/s starts, the link is resumed, and the
#     script polls every 0.5 s until the backlog is zero: the far end offsets reach the edge's
#     end offsets as read at the poll before (a backlog under half a second of writes). It
#     prints the time from the resume to that, the catch-up rate (the bytes of record values
#     that reached the far side over that time, backlog and new writes together, in MB/s,
#     10^6 bytes), and the peak RSS (VmHWM, reset at the resume through /proc/PID/clear_refs)
#     of the edge and of the far node over the catch-up, with the edge's CPU seconds.
#
# The issue's figure is an hour at 1 MB/s: the defaults (3,600 s at 1,000,000 bytes/s, 3.6 GB,
# 3.6 million records of 1,000 bytes). The link's max.backlog.bytes is set above the backlog
# so that nothing is dropped. Needs about twice the backlog in free disk space (edge and far).
#
# Usage: scripts/uplink-outage.sh [OUTAGE_S]     (default 3600)
#   scripts/uplink-outage.sh 60                   a short check that it works
#
# Environment:
#   WREN_BIN                 the wren binary (default: built from this checkout)
#   WREN_UPLINK_RATE=B       the steady write rate, bytes/s (default 1000000)
#   WREN_UPLINK_RECORD=B     record value size, bytes (default 1000)
#   WREN_UPLINK_PARTITIONS=P partitions of topic steady (default 6)
#   WREN_UPLINK_TIMEOUT=S    deadline of the catch-up and of every wait (default 1800)
#
# Everything listens on random free loopback ports; every process started and the working
# directory are removed on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
outage="${1:-3600}"
rate="${WREN_UPLINK_RATE:-1000000}"
size="${WREN_UPLINK_RECORD:-1000}"
parts="${WREN_UPLINK_PARTITIONS:-6}"
tmo="${WREN_UPLINK_TIMEOUT:-1800}"
work=""
die() {
	echo "uplink-outage: $*" >&2
	local f
	for f in "$work"/*/wren.log; do
		[[ -n $work && -s $f ]] || continue
		echo "uplink-outage: the last lines of ${f#"$work/"}:" >&2
		tail -n 20 "$f" | sed 's/^/   | /' >&2
	done
	exit 2
}
for v in outage rate size parts tmo; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got ${!v}"
done
command -v python3 >/dev/null || die "python3 not found"

work="$(mktemp -d)"
pids=()
stop_pid() { # PID: SIGTERM, SIGKILL past 60 s
	local pid="$1" end=$((SECONDS + 60))
	kill -TERM "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= end)); then
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local p
	for p in "${pids[@]}"; do stop_pid "$p"; done
	rm -rf "$work"
}
trap cleanup EXIT

wren="$work/wren"
if [[ -n "${WREN_BIN:-}" ]]; then
	cp "$WREN_BIN" "$wren"
else
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$wren" .)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
wait_port() { # port
	local end=$((SECONDS + 30))
	until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		((SECONDS < end)) || die "nothing listens on 127.0.0.1:$1"
		sleep 0.05
	done
}
clk_tck=$(getconf CLK_TCK)
cpu_s() { sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$clk_tck" '{printf "%.2f", ($12 + $13) / t}'; }
hwm_mib() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# reset_hwm PID: VmHWM starts again from the resident set now (Linux 4.0+).
reset_hwm() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || echo "uplink-outage: cannot reset the peak RSS of pid $1: figures are the process's whole life" >&2; }
end_sum() { # BOOTSTRAP TOPIC: the sum of its end offsets (0 if it does not answer)
	local out
	out=$("$wren" offsets -b "$1" --timeout 5s "$2" 2>/dev/null) || out=""
	awk -F: '{s += $NF} END {print s + 0}' <<<"$out"
}

# node NAME EXTRA: start a single-node wren in $work/NAME; sets node_boot and node_pid.
node() {
	local port cport
	port=$(free_port)
	cport=$(free_port)
	mkdir -p "$work/$1"
	cat >"$work/$1/wren.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$work/$1/data"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[http]
listen = "127.0.0.1:0"
[logging]
level = "warn"
$2
TOML
	"$wren" serve --config "$work/$1/wren.toml" >>"$work/$1/wren.log" 2>&1 &
	node_pid=$!
	pids+=("$node_pid")
	node_boot="127.0.0.1:$port"
	wait_port "$port"
}

records=$((outage * rate / size))
recps=$(awk -v r="$rate" -v s="$size" 'BEGIN {printf "%.3f", r / s}')
budget=$((records * (size + 200) * 2))
echo "== uplink outage: ${outage} s at $rate bytes/s ($records records of $size bytes, $(awk -v b="$((records * size))" 'BEGIN {printf "%.2f", b / 1e9}') GB) on $parts partitions, edge wren -> far wren, loopback"
echo "   $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

node far ""
far_boot=$node_boot far_pid=$node_pid
node edge "[uplink.outage]
bootstrap.servers = [\"$far_boot\"]
topics = [\"steady\"]
remote.topic.prefix = \"edge.\"
compression = \"none\"
max.backlog.bytes = $budget"
edge_boot=$node_boot edge_pid=$node_pid

# The link up: a first record reaches the far side, then the pause.
"$wren" perf produce -b "$edge_boot" --topic steady --num-records "$parts" --record-size "$size" --partitions "$parts" \
	--reporting-interval 1h --timeout 60s >/dev/null 2>"$work/first.err" || { cat "$work/first.err" >&2; die "the first records failed"; }
end=$((SECONDS + 120))
until (($(end_sum "$far_boot" edge.steady) >= parts)); do
	((SECONDS < end)) || die "the link forwarded nothing within 120 s"
	sleep 0.2
done
"$wren" uplink pause outage -b "$edge_boot" >/dev/null

# 1. The outage's backlog, written as fast as the edge takes it.
t0=$(now)
"$wren" perf produce -b "$edge_boot" --topic steady --num-records "$records" --record-size "$size" --acks all \
	--reporting-interval 1h --timeout 120s --format json >"$work/fill.json" 2>"$work/fill.err" ||
	{ cat "$work/fill.err" >&2; die "writing the backlog failed"; }
fill_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
backlog=$(($(end_sum "$edge_boot" steady) - $(end_sum "$far_boot" edge.steady)))
echo "   backlog of $backlog records written in ${fill_s} s (the outage's writes, faster than real time), the link paused; edge peak RSS so far $(hwm_mib "$edge_pid") MiB"

# 2. The return, with the steady producer going on.
"$wren" perf produce -b "$edge_boot" --topic steady --duration "$((tmo + 60))s" --record-size "$size" \
	--throughput "$recps" --acks all --reporting-interval 1h --timeout 120s --format json >"$work/steady.json" 2>"$work/steady.err" &
prod_pid=$!
pids+=("$prod_pid")
reset_hwm "$edge_pid"
reset_hwm "$far_pid"
far_before=$(end_sum "$far_boot" edge.steady)
cpu_before=$(cpu_s "$edge_pid")
"$wren" uplink resume outage -b "$edge_boot" >/dev/null
t0=$(now)
prev=$(end_sum "$edge_boot" steady)
end=$((SECONDS + tmo))
caught="" next_note=$((SECONDS + 30))
while ((SECONDS < end)); do
	sleep 0.5
	far=$(end_sum "$far_boot" edge.steady)
	if ((far >= prev)); then
		caught=$(now)
		break
	fi
	kill -0 "$prod_pid" 2>/dev/null || { cat "$work/steady.err" >&2; die "the steady producer exited during the catch-up"; }
	if ((SECONDS >= next_note)); then
		echo "   ... $(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.0f", b - a}') s: $((prev - far)) records to go"
		next_note=$((SECONDS + 30))
	fi
	prev=$(end_sum "$edge_boot" steady)
done
[[ -n "$caught" ]] || die "the backlog was not zero within ${tmo} s of the resume"
far_after=$(end_sum "$far_boot" edge.steady)
edge_hwm=$(hwm_mib "$edge_pid") far_hwm=$(hwm_mib "$far_pid")
edge_cpu=$(awk -v a="$cpu_before" -v b="$(cpu_s "$edge_pid")" 'BEGIN {printf "%.1f", b - a}')
zero_s=$(awk -v a="$t0" -v b="$caught" 'BEGIN {printf "%.1f", b - a}')
moved=$((far_after - far_before))
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "outage of $outage s at $rate bytes/s: $backlog records ($(awk -v b="$((backlog * size))" 'BEGIN {printf "%.2f", b / 1e9}') GB) waiting at the resume"
echo "zero backlog ${zero_s} s after the link's return, the producer going on at $rate bytes/s"
awk -v m="$moved" -v s="$size" -v t="$zero_s" 'BEGIN {printf "catch-up rate: %.1f MB/s (%d records, %.0f records/s, over the %.1f s)\n", m * s / t / 1e6, m, m / t, t}'
echo "peak RSS over the catch-up: edge $edge_hwm MiB, far node $far_hwm MiB; edge CPU ${edge_cpu} s"
