#!/usr/bin/env bash
# scale-cluster.sh: three wren nodes on loopback with PARTITIONS partitions at replication
# factor 3, measured:
#   1. creation: topics of 100 partitions, created in CreateTopics requests of 100 topics each,
#      and the time until every ISR holds all three replicas;
#   2. the metadata image: the metadata log and snapshot on each node's disk, each node's RSS;
#   3. idle: CPU used by each node over IDLE seconds, and the ISR changes committed meanwhile
#      (the leaders' "ISR change committed" log lines: at idle there must be none);
#   4. Metadata for all topics and ListOffsets for every partition: answer time and size;
#   5. SIGKILL of the acting controller: the time from the kill to Metadata showing another
#      controller and no partition led by the dead node, then, with the node restarted, the
#      time until it serves again (/readyz) and until every ISR holds all three replicas again.
# The machine's noise shows in every figure: run it more than once before comparing.
#
# Usage: scripts/scale-cluster.sh [PARTITIONS]      (default 1000; a multiple of 100)
# Environment:
#   WREN_BIN         the wren binary (default: built from this checkout)
#   WREN_DIR         where the nodes' directories go (default: $TMPDIR or /tmp)
#   WREN_IDLE_S      seconds of idle to measure (default 60)
#   WREN_BATCH       topics per CreateTopics request (default 100)
#   WREN_KEEP=1      keep the directory (configs, data, logs)
# Every node needs about three open files per partition it holds (all of them, at RF 3 on three
# nodes) until the engine caches its handles: the script raises `ulimit -n` as far as it may and
# says when that is too low.
# Needs: go, python3, curl.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
partitions="${1:-1000}"
idle_s="${WREN_IDLE_S:-60}"
batch="${WREN_BATCH:-100}"
per_topic=100
if ((partitions < per_topic || partitions % per_topic != 0)); then
	echo "scale-cluster: PARTITIONS must be a multiple of $per_topic" >&2
	exit 2
fi
topics=$((partitions / per_topic))

work="$(mktemp -d "${WREN_DIR:-${TMPDIR:-/tmp}}/wren-scale.XXXXXX")"
export CLUSTER_DIR="$work/cluster"
cleanup() {
	"$here/local-cluster.sh" kill >/dev/null 2>&1 || true
	if [[ "${WREN_KEEP:-}" == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "scale: $*"; }

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < partitions * 3 + 2000)); then
	say "WARNING: ulimit -n is $(ulimit -n), about $((partitions * 3 + 2000)) are needed per node"
fi

export WREN_BIN="${WREN_BIN:-}"
if [[ -z "$WREN_BIN" ]]; then
	WREN_BIN="$work/wren"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$WREN_BIN" .)
fi
probe="$work/scale-probe"
(cd "$root" && go build -o "$probe" scripts/scale-probe.go)

# shellcheck source=cluster-ports.sh
source "$here/cluster-ports.sh"
BASE_PORT=$(free_base_port)
export BASE_PORT
"$here/local-cluster.sh" config >/dev/null
cat >>"$CLUSTER_DIR/cluster.toml" <<'TOML'

[logging]
level = "info"
TOML
boot=$("$here/local-cluster.sh" bootstrap)
http_port() { echo $((BASE_PORT + 10 * $1 + 2)); }
pid_of() { cat "$CLUSTER_DIR/node$1.pid"; }
now_ns() { date +%s%N; }
elapsed_ms() { echo $((($(now_ns) - $1) / 1000000)); }

wait_ready() { # node timeout_s
	local deadline=$((SECONDS + $2))
	until curl -fsS "http://127.0.0.1:$(http_port "$1")/readyz" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then
			say "node $1 not ready within $2 s; its log: $CLUSTER_DIR/node$1.log"
			tail -5 "$CLUSTER_DIR/node$1.log" >&2
			exit 1
		fi
		sleep 0.1
	done
}

log_partitions() { curl -fsS "http://127.0.0.1:$(http_port "$1")/metrics" 2>/dev/null | awk '/^wren_storage_log_partitions/ {print $2}'; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
isr_changes() { cat "$CLUSTER_DIR"/node*.log | grep -c 'ISR change committed' || true; }
metadata_dir() { # node: the quorum's directory
	find "$CLUSTER_DIR/data$1" -maxdepth 2 -type d -name '__cluster_quorum' | head -1
}

say "$("$WREN_BIN" version 2>/dev/null | head -1 || true); $partitions partitions ($topics topics x $per_topic), RF 3, three nodes; ulimit -n $(ulimit -n); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: figures are noisy)"
"$here/local-cluster.sh" start >/dev/null
for n in 1 2 3; do wait_ready "$n" 60; done

# 1. Creation.
out=$("$probe" -b "$boot" create "$topics" "$per_topic" 3 "$batch")
say "create: $out (batches of $batch topics)"
# Metadata shows every ISR full from the start (new partitions' ISR is all their replicas): the
# creation is done when every node has opened every partition's log.
start=$(now_ns)
deadline=$((SECONDS + 900))
while :; do
	total=$("$probe" -b "$boot" metadata | sed 's/.* partitions=//')
	held=$(for n in 1 2 3; do log_partitions "$n"; done | sort -u)
	[[ "$held" == "$total" ]] && ((total >= partitions)) && break
	if ((SECONDS > deadline)); then
		say "the nodes hold $(echo $held) partition logs of $total after 900 s"
		exit 1
	fi
	sleep 1
done
say "every node holds all $total partition logs $(elapsed_ms "$start") ms after CreateTopics returned"
out=$("$probe" -b "$boot" wait-isr 3 600)
say "after creation: $out"

# 2. The metadata image.
for n in 1 2 3; do
	d=$(metadata_dir "$n")
	say "node $n: metadata dir $(du -sk "$d" | cut -f1) KiB ($(find "$d" -type f -printf '%f=%s ' | tr '\n' ' ')), RSS $(rss_kib "$(pid_of "$n")") KiB, open files $(find "/proc/$(pid_of "$n")/fd" -maxdepth 1 | wc -l)"
done

# 3. Idle.
before_isr=$(isr_changes)
declare -A t0
for n in 1 2 3; do t0[$n]=$(cpu_ticks "$(pid_of "$n")"); done
sleep "$idle_s"
hz=$(getconf CLK_TCK)
for n in 1 2 3; do
	used=$(($(cpu_ticks "$(pid_of "$n")") - t0[$n]))
	say "idle node $n: CPU $(awk -v u="$used" -v hz="$hz" -v s="$idle_s" 'BEGIN {printf "%.1f", 100 * u / hz / s}') % of a core over $idle_s s, RSS $(rss_kib "$(pid_of "$n")") KiB"
done
say "idle: $(($(isr_changes) - before_isr)) ISR changes committed in $idle_s s"

# 4. Metadata and ListOffsets.
for i in 1 2 3; do say "metadata (run $i): $("$probe" -b "$boot" metadata)"; done
for i in 1 2 3; do say "listoffsets (run $i): $("$probe" -b "$boot" listoffsets)"; done

# 5. SIGKILL of the controller.
ctrl=$(curl -fsS "http://127.0.0.1:$(http_port 1)/metrics" | awk '/^wren_cluster_controller_id/ {print $2}')
[[ "$ctrl" =~ ^[123]$ ]] || { say "no controller known: $ctrl"; exit 1; }
others=""
for n in 1 2 3; do [[ $n == "$ctrl" ]] || others+="${others:+,}127.0.0.1:$((BASE_PORT + 10 * n))"; done
killed=$(now_ns)
kill -KILL "$(pid_of "$ctrl")"
out=$("$probe" -b "$others" wait-moved "$ctrl" "$killed" 120)
say "SIGKILL of controller node $ctrl: $out"
rm -f "$CLUSTER_DIR/node$ctrl.pid"
start=$(now_ns)
"$here/local-cluster.sh" start "$ctrl" >/dev/null
wait_ready "$ctrl" 600
say "node $ctrl restarted: ready after $(elapsed_ms "$start") ms"
out=$("$probe" -b "$boot" wait-isr 3 600)
say "node $ctrl back in every ISR $(elapsed_ms "$start") ms after its restart ($out)"
d=$(metadata_dir "$ctrl")
say "node $ctrl after restart: metadata dir $(du -sk "$d" | cut -f1) KiB ($(find "$d" -type f -printf '%f=%s ' | tr '\n' ' '))"
