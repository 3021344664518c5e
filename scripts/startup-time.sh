#!/usr/bin/env bash
# startup-time.sh: the figures of an idle broker's footprint. Measures
#   1. the disk an idle, fresh single-node broker uses (its 50 or so
#      __consumer_offsets partitions and the metadata log),
#   2. the disk it uses with TOPICS x PARTITIONS more partitions holding a
#      little data (default 16 x 10 = 160 partitions, 16 MiB of records),
#   3. the time from process start to the first accepted TCP connection on
#      the client port when the broker restarts on that data directory,
#      RUNS times (after a clean stop, SIGTERM), with the median.
# Disk use is allocated blocks (du -sk), not apparent size; both are shown.
#
# Usage: scripts/startup-time.sh [RUNS]     (default 7)
# Environment:
#   WREN_BIN         the wren binary to measure (default: built from this checkout)
#   WREN_DIR         where the temporary data directory goes (default: $TMPDIR or /tmp);
#                    put it on the disk you want to measure
#   WREN_TOPICS      topics to create (default 16)
#   WREN_PARTITIONS  partitions per topic (default 10)
#   WREN_DATA_MB     MiB of 1 KiB records produced across the topics (default 16)
#   WREN_OFFSETS_PARTITIONS  offsets.topic.num.partitions (default: the broker's), to compare
#                    binaries whose defaults differ at the same partition count
#   WREN_KILL=1      stop the broker with SIGKILL before each restart instead of SIGTERM,
#                    so each start recovers the active segments
#   WREN_KEEP=1      keep the data directory
# Needs: go (unless WREN_BIN is set), python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs="${1:-7}"
topics="${WREN_TOPICS:-16}"
parts="${WREN_PARTITIONS:-10}"
data_mb="${WREN_DATA_MB:-16}"
work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-startup.XXXXXX")"
pid=""
cleanup() {
	[[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "data kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

wren="${WREN_BIN:-}"
if [[ -z "$wren" ]]; then
	wren="$work/wren"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$wren" .)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
cport=$(free_port)
data="$work/data"
mkdir -p "$data"
cat >"$work/wren.toml" <<TOML
[broker]
node.id = 1
log.dirs = ["$data"]
listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$cport"]
[cluster]
controller.quorum.voters = ["1@127.0.0.1:$cport"]
[logging]
level = "warn"
TOML
if [[ -n "${WREN_OFFSETS_PARTITIONS:-}" ]]; then
	printf '[groups]\noffsets.topic.num.partitions = %d\n' "$WREN_OFFSETS_PARTITIONS" >>"$work/wren.toml"
fi

# start_broker starts wren in the background and sets pid and ms: the
# milliseconds from just before the fork to the first accepted connection.
# The poller connects every 0.5 ms, so the figure is good to about 1 ms.
start_broker() {
	python3 - "$wren" "$work/wren.toml" "$port" "$work/serve.log" <<'PY' >"$work/start.out"
import socket, subprocess, sys, time
wren, cfg, port, logpath = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
log = open(logpath, "ab")
t0 = time.monotonic()
p = subprocess.Popen([wren, "serve", "--config", cfg], stdout=log, stderr=log, start_new_session=True)
deadline = t0 + 60
while True:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        t1 = time.monotonic()
        s.close()
        break
    except OSError:
        s.close()
        if p.poll() is not None:
            sys.exit("wren exited with %d; see %s" % (p.returncode, logpath))
        if time.monotonic() > deadline:
            p.kill()
            sys.exit("nothing accepted a connection on port %d within 60 s" % port)
        time.sleep(0.0005)
print(p.pid, "%.1f" % ((t1 - t0) * 1000))
PY
	read -r pid ms <"$work/start.out"
}

stop_broker() {
	if [[ "${WREN_KILL:-}" == 1 ]]; then kill -KILL "$pid"; else kill -TERM "$pid"; fi
	# The broker is not our child (python started it), so poll for its exit.
	for _ in $(seq 1 600); do
		kill -0 "$pid" 2>/dev/null || { pid=""; return 0; }
		sleep 0.05
	done
	echo "startup-time: wren $pid did not stop within 30 s" >&2
	exit 1
}

disk() { # label
	sync
	printf '%-44s du -sk %7s KiB   apparent %7s KiB   files %s\n' "$1" \
		"$(du -sk "$data" | cut -f1)" "$(du -sk --apparent-size "$data" | cut -f1)" "$(find "$data" -type f | wc -l)"
}

echo "startup-time: $("$wren" version 2>/dev/null | head -1 || true) data in $data ($(stat -f -c %T "$data"))"
df_before=$(df -k --output=used "$data" | tail -1)
start_broker
echo "fresh start: first connection after $ms ms"
# The group coordinator creates __consumer_offsets before the listener
# opens; wait for its partition directories all the same.
for _ in $(seq 1 200); do
	[[ -n "$(find "$data" -maxdepth 1 -name '__consumer_offsets-*' -print -quit)" ]] && break
	sleep 0.05
done
disk "idle fresh broker:"
echo "  ($(find "$data" -maxdepth 1 -type d -name '*-[0-9]*' | wc -l) partition directories; df used grew $(($(df -k --output=used "$data" | tail -1) - df_before)) KiB, noisy on a shared disk)"

records=$((data_mb * 1024 / topics))
for t in $(seq 1 "$topics"); do
	"$wren" topic create -b "127.0.0.1:$port" "load-$t" -p "$parts" >/dev/null
	if ((records > 0)); then
		"$wren" perf produce -b "127.0.0.1:$port" --topic "load-$t" --num-records "$records" \
			--record-size 1024 --acks all --reporting-interval 1h >/dev/null 2>&1
	fi
done
disk "with $topics x $parts more partitions, ${data_mb} MiB:"
how="clean stop"
[[ "${WREN_KILL:-}" == 1 ]] && how="SIGKILL"
stop_broker
disk "after a $how:"

times=()
for _ in $(seq 1 "$runs"); do
	start_broker
	times+=("$ms")
	stop_broker
done
echo "restart ($((topics * parts)) partitions + __consumer_offsets, after $how), ms to first connection: ${times[*]}"
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median %s ms over %d runs (min %s, max %s)\n", a[int((NR + 1) / 2)], NR, a[1], a[NR] }'
