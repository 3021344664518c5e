#!/usr/bin/env bash
# local-cluster.sh: a three-node wren cluster on one machine, for trying the metadata quorum
# (controller election, failover, fencing) without three hosts.
#
# Usage:
#   scripts/local-cluster.sh config              write the config (first time), print its path;
#                                                a script may append tables no node sets
#   scripts/local-cluster.sh start   [NODE...]   write the config (first time) and start nodes
#   scripts/local-cluster.sh stop    [NODE...]   clean shutdown (SIGTERM, wait for exit)
#   scripts/local-cluster.sh kill    [NODE...]   SIGKILL, as a power cut would
#   scripts/local-cluster.sh restart [NODE...]   stop, then start
#   scripts/local-cluster.sh status              which nodes run, then `wren cluster quorum`
#   scripts/local-cluster.sh bootstrap           print the client addresses, comma-separated
#   scripts/local-cluster.sh check               kcat -L against each running node (each must list
#                                                every running node and the same controller), then
#                                                `wren cluster health`; exits non-zero on a mismatch
# NODE is 1, 2 or 3; none means all three.
#
# Environment:
#   WREN_BIN      the wren binary (default: wren on PATH, else built from this checkout)
#   CLUSTER_DIR   where configs, data, logs and pid files go (default: ./local-cluster)
#   BASE_PORT     node N listens for clients on BASE_PORT+10*N, for peers on BASE_PORT+10*N+1,
#                 and serves /metrics and /readyz on BASE_PORT+10*N+2
#                 (default 19000: 19010/19011/19012, 19020/19021/19022, 19030/19031/19032)
#
# The whole cluster is one file, $CLUSTER_DIR/cluster.toml, as it would be on three hosts:
# every node runs `wren serve --config cluster.toml --node-id N`. On three hosts the
# [node.N.*] tables are not needed (each node finds itself by its address); on one machine
# they give each node its own ports and data directory.
set -euo pipefail

CLUSTER_DIR=${CLUSTER_DIR:-./local-cluster}
BASE_PORT=${BASE_PORT:-19000}
NODES=(1 2 3)

bin() {
	if [[ -n "${WREN_BIN:-}" ]]; then
		echo "$WREN_BIN"
	elif command -v wren >/dev/null; then
		command -v wren
	else
		local root
		root=$(cd "$(dirname "$0")/.." && pwd)
		mkdir -p "$CLUSTER_DIR"
		(cd "$root" && go build -o "$OLDPWD/$CLUSTER_DIR/wren" .) >&2
		echo "$CLUSTER_DIR/wren"
	fi
}

client_port() { echo $((BASE_PORT + 10 * $1)); }
peer_port() { echo $((BASE_PORT + 10 * $1 + 1)); }
http_port() { echo $((BASE_PORT + 10 * $1 + 2)); }

voters() {
	local out="" n
	for n in "${NODES[@]}"; do
		out+="${out:+, }\"$n@127.0.0.1:$(peer_port "$n")\""
	done
	echo "$out"
}

write_config() {
	local conf="$CLUSTER_DIR/cluster.toml" n
	[[ -f "$conf" ]] && return
	mkdir -p "$CLUSTER_DIR"
	{
		cat <<CONF
[cluster]
controller.quorum.voters = [$(voters)]
CONF
		for n in "${NODES[@]}"; do
			cat <<CONF

[node.$n.broker]
log.dirs = ["$CLUSTER_DIR/data$n"]
listeners = ["PLAINTEXT://127.0.0.1:$(client_port "$n")", "CONTROLLER://127.0.0.1:$(peer_port "$n")"]
[node.$n.http]
listen = "127.0.0.1:$(http_port "$n")"
CONF
		done
	} >"$conf"
}

pid_of() {
	local f="$CLUSTER_DIR/node$1.pid"
	[[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

start_node() {
	local n=$1 wren
	if pid_of "$n" >/dev/null; then
		echo "node $n already runs (pid $(pid_of "$n"))"
		return
	fi
	write_config
	wren=$(bin)
	nohup "$wren" serve --config "$CLUSTER_DIR/cluster.toml" --node-id "$n" >>"$CLUSTER_DIR/node$n.log" 2>&1 &
	echo $! >"$CLUSTER_DIR/node$n.pid"
	echo "node $n started (pid $!, clients 127.0.0.1:$(client_port "$n"), log $CLUSTER_DIR/node$n.log)"
}

signal_node() {
	local n=$1 sig=$2 pid i
	if ! pid=$(pid_of "$n"); then
		echo "node $n is not running"
		return
	fi
	kill "-$sig" "$pid"
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "node $n (pid $pid) did not exit within 30 s" >&2
		return 1
	fi
	rm -f "$CLUSTER_DIR/node$n.pid"
	echo "node $n stopped ($sig)"
}

bootstrap() {
	local out="" n
	for n in "${NODES[@]}"; do
		out+="${out:+,}127.0.0.1:$(client_port "$n")"
	done
	echo "$out"
}

cmd=${1:-}
shift || true
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${NODES[@]}")
for n in "${targets[@]}"; do
	[[ "$n" =~ ^[123]$ ]] || { echo "node must be 1, 2 or 3, not $n" >&2; exit 2; }
done

case "$cmd" in
config)
	write_config
	echo "$CLUSTER_DIR/cluster.toml"
	;;
start) for n in "${targets[@]}"; do start_node "$n"; done ;;
stop) for n in "${targets[@]}"; do signal_node "$n" TERM; done ;;
kill) for n in "${targets[@]}"; do signal_node "$n" KILL; done ;;
restart)
	for n in "${targets[@]}"; do signal_node "$n" TERM; done
	for n in "${targets[@]}"; do start_node "$n"; done
	;;
status)
	for n in "${NODES[@]}"; do
		if pid=$(pid_of "$n"); then echo "node $n: running (pid $pid)"; else echo "node $n: stopped"; fi
	done
	"$(bin)" cluster quorum -b "$(bootstrap)" || true
	;;
bootstrap) bootstrap ;;
check)
	command -v kcat >/dev/null || { echo "check needs kcat (Debian: apt-get install kcat)" >&2; exit 2; }
	running=0 controllers=""
	for n in "${NODES[@]}"; do pid_of "$n" >/dev/null && running=$((running + 1)); done
	for n in "${NODES[@]}"; do
		pid_of "$n" >/dev/null || continue
		md=$(kcat -L -m 10 -b "127.0.0.1:$(client_port "$n")")
		brokers=$(grep -c '^  broker ' <<<"$md" || true)
		# No controller line is a mismatch to report, not a reason for set -e to end the script.
		ctrl=$(grep '(controller)' <<<"$md" | awk '{print $2}' || true)
		echo "node $n: kcat -L lists $brokers broker(s), controller ${ctrl:-none}"
		if [[ "$brokers" -ne "$running" || -z "$ctrl" ]]; then
			echo "node $n: want $running brokers and a controller" >&2
			exit 1
		fi
		controllers+="$ctrl "
	done
	if [[ $(tr ' ' '\n' <<<"$controllers" | sort -u | grep -c .) -gt 1 ]]; then
		echo "the nodes disagree on the controller: $controllers" >&2
		exit 1
	fi
	"$(bin)" cluster health -b "$(bootstrap)"
	;;
*)
	sed -n '2,25p' "$0" >&2
	exit 2
	;;
esac
