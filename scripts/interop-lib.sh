# interop-lib.sh: sourced by scripts/interop.sh, interop-groups.sh and interop-cluster.sh. What
# their checks share: the ok/FAIL/skip lines and their count, the work directory kept with the
# node logs on failure, and the TARGET the client steps run against, so that the same step
# functions run on one node and on a cluster (interop-cluster.sh starts only the cluster):
#
#   single   one wren node on free loopback ports
#   cluster  three nodes (scripts/local-cluster.sh, one config file, free ports); clients
#            bootstrap from a node that is neither the controller nor, for a group, the group's
#            coordinator, and topics have three replicas
#   kill     the same cluster again, while a node is SIGKILLed and restarted in the middle of
#            each step (fault_start, fault_mid, fault_end)
#
# WREN_INTEROP_TARGETS names the targets a script runs, in order (default "single cluster
# kill"). A step reads these, set by target_up:
#   bootstrap   what clients bootstrap from (host:port of one node)
#   rf          the replication factor of the topics it creates
#   tag         the prefix of its ok/FAIL lines: [1 node], [3 nodes], [3 nodes, kill]
#   target      single, cluster or kill
# and, on a cluster, controller, boot_node (the node behind bootstrap) and third (the node that
# is neither). Every function is safe under set -euo pipefail.
#
# The caller sets root and may set extra_config (TOML appended to every node's config: tables
# that no node table sets, such as [groups] or [topics]) before interop_init, and may define
# cluster_configure CONF, called with the cluster's config file before its nodes first start.

interop_client_timeout="${WREN_INTEROP_TIMEOUT:-120}"
py=/usr/bin/python3
# The client scripts import records.py: leave no __pycache__ in the checkout.
export PYTHONDONTWRITEBYTECODE=1
pydir="$root/interop/python"

passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s%s\n' "${tag:+$tag }" "$*"; }
skip() { printf 'skip %s%s\n' "${tag:+$tag }" "$*"; }
# fail LINE [LOG]: count a failure and show the evidence under it.
fail() {
	failed=$((failed + 1))
	printf 'FAIL %s%s\n' "${tag:+$tag }" "$1"
	if [[ -n "${2:-}" && -s "$2" ]]; then
		tail -n 25 "$2" | sed 's/^/     | /'
	fi
}

tmo() { timeout --kill-after=10 "$interop_client_timeout" "$@"; }

# interop_init NAME: the work directory (kept on failure, with every node's log) and the exit
# trap that stops what the script started and prints the summary line of a run stopped early.
interop_init() {
	interop_name=$1
	interop_started=$SECONDS
	work="$(mktemp -d "${TMPDIR:-/tmp}/wren-$interop_name.XXXXXX")"
	mkdir -p "$work/logs"
	finished=0
	single_pid=""
	cluster_up=0
	target="" tag=""
	trap interop_cleanup EXIT
	trap 'exit 130' INT TERM
}

# node_logs: every node log of the targets started so far.
node_logs() {
	local f
	for f in "$work/single/wren.log" "$work/cluster"/node[123].log; do
		[[ -s $f ]] && echo "$f"
	done
	return 0
}

show_node_logs() {
	local f
	while read -r f; do
		echo "     ${f#"$work/"}:"
		tail -n "${1:-25}" "$f" | sed 's/^/     | /'
	done < <(node_logs)
}

interop_cleanup() {
	local rc=$?
	trap - EXIT
	target_down
	if [[ $finished == 0 ]]; then
		failed=$((failed + 1))
		tag=""
		printf 'FAIL %s stopped early (exit status %s)\n' "$interop_name.sh" "$rc"
		show_node_logs 10
		rc=1
	fi
	if [[ $rc == 0 && $failed == 0 && ${WREN_INTEROP_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "$interop_name: work directory kept: $work (node logs: $(node_logs | tr '\n' ' '))"
	fi
	[[ $finished == 1 ]] || echo "$passed passed, $failed failed"
	exit "$rc"
}

# interop_finish: the closing lines; the exit status says whether everything passed.
interop_finish() {
	tag=""
	if [[ $failed -gt 0 ]]; then
		echo "$interop_name: tails of the node logs:"
		show_node_logs 25
	fi
	echo "$interop_name: took $((SECONDS - interop_started)) s"
	finished=1
	echo "$passed passed, $failed failed"
	[[ $failed == 0 ]]
}

# interop_targets: the targets to run, checked.
interop_targets() {
	local t
	for t in ${WREN_INTEROP_TARGETS:-single cluster kill}; do
		case $t in
		single | cluster | kill) echo "$t" ;;
		*)
			echo "$interop_name: WREN_INTEROP_TARGETS: unknown target $t (want single, cluster, kill)" >&2
			return 2
			;;
		esac
	done
}

# build_wren: the wren binary the checks run: WREN_BIN if set (CI builds one for all its
# steps), else a build of this checkout.
build_wren() {
	if [[ -n ${WREN_BIN:-} ]]; then
		wren=$WREN_BIN
		echo "$interop_name: wren is $wren (WREN_BIN)"
		return
	fi
	echo "$interop_name: building wren"
	(cd "$root" && go build -o "$work/wren" .)
	wren="$work/wren"
}

# build_java: Apache Kafka's Java client and wren.interop.Interop (interop/java), into
# $work/java, or into WREN_INTEROP_JAVA_DIR if set, where a build an earlier script of the same
# run made is used as it is (CI sets it to a fresh directory for its interop step); java_ok
# says whether it built, java_cp is its classpath.
build_java() {
	java_ok=0
	local dir=${WREN_INTEROP_JAVA_DIR:-$work/java}
	java_cp="$dir/classes:$dir/lib/*"
	if [[ -n ${WREN_INTEROP_JAVA_DIR:-} && -f $dir/classes/wren/interop/Interop.class ]] &&
		compgen -G "$dir/lib/kafka-clients-*.jar" >/dev/null; then
		local jars=("$dir/lib"/kafka-clients-*.jar)
		local version=${jars[0]##*/kafka-clients-}
		ok "java client build (kafka-clients ${version%.jar}, built earlier in $dir)"
		java_ok=1
		return
	fi
	echo "$interop_name: building the Java client (Maven)"
	if mvn -q -B -f "$root/interop/java/pom.xml" -Dinterop.build.dir="$dir" package >"$work/logs/maven.log" 2>&1; then
		local jars=("$dir/lib"/kafka-clients-*.jar)
		local version=${jars[0]##*/kafka-clients-}
		ok "java client build (kafka-clients ${version%.jar})"
		java_ok=1
	else
		fail "java client build" "$work/logs/maven.log"
	fi
}

# ---- targets ------------------------------------------------------------------------------

# free_port prints a loopback TCP port nothing listens on (the kernel picks it).
free_port() {
	$py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# target_up TARGET: start it (kill reuses the running cluster) and set bootstrap, rf, tag.
target_up() {
	target=$1
	case $target in
	single)
		tag="[1 node]"
		start_single
		rf=1
		;;
	cluster | kill)
		if [[ $target == kill ]]; then tag="[3 nodes, kill]"; else tag="[3 nodes]"; fi
		[[ $cluster_up == 1 ]] || start_cluster
		rf=3
		cluster_roles
		echo "$interop_name: $tag controller node $controller, clients bootstrap from node $boot_node ($bootstrap)"
		;;
	esac
}

target_down() {
	if [[ -n $single_pid ]] && kill -0 "$single_pid" 2>/dev/null; then
		kill -TERM "$single_pid" 2>/dev/null || true
		# wren exits in well under a second on SIGTERM; KILL it if it does not within 15 s.
		local deadline=$((SECONDS + 15))
		while kill -0 "$single_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		kill -KILL "$single_pid" 2>/dev/null || true
		wait "$single_pid" 2>/dev/null || true
	fi
	single_pid=""
	if [[ $cluster_up == 1 ]]; then
		CLUSTER_DIR="$work/cluster" WREN_BIN="$wren" BASE_PORT=$base_port \
			"$root/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true
		# A node local-cluster.sh could not stop within its 30 s.
		local f
		for f in "$work/cluster"/node*.pid; do
			[[ -f "$f" ]] && kill -KILL "$(cat "$f")" 2>/dev/null || true
		done
		cluster_up=0
	fi
}

# target_alive: every node of the target still runs (a step may have restarted one).
target_alive() {
	case $target in
	single) kill -0 "$single_pid" 2>/dev/null ;;
	*)
		local n
		for n in 1 2 3; do
			kill -0 "$(cat "$work/cluster/node$n.pid" 2>/dev/null || echo 0)" 2>/dev/null || return 1
		done
		;;
	esac
}

start_single() {
	local attempt port ctl deadline dir="$work/single"
	mkdir -p "$dir/data"
	for attempt in 1 2 3; do
		port=$(free_port)
		ctl=$(free_port)
		cat >"$dir/wren.toml" <<-EOF
			[broker]
			node.id = 1
			log.dirs = ["$dir/data"]
			listeners = ["PLAINTEXT://127.0.0.1:$port", "CONTROLLER://127.0.0.1:$ctl"]

			[cluster]
			controller.quorum.voters = ["1@127.0.0.1:$ctl"]

			[http]
			listen = ""
			${extra_config:-}
		EOF
		"$wren" serve --config "$dir/wren.toml" >"$dir/wren.log" 2>&1 &
		single_pid=$!
		deadline=$((SECONDS + 30))
		while ((SECONDS < deadline)); do
			kill -0 "$single_pid" 2>/dev/null || break
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				bootstrap="127.0.0.1:$port"
				echo "$interop_name: [1 node] wren $bootstrap, data $dir/data"
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$single_pid" 2>/dev/null; then
			echo "$interop_name: wren did not accept connections on 127.0.0.1:$port within 30 s" >&2
			return 1
		fi
		wait "$single_pid" 2>/dev/null || true
		single_pid=""
		echo "$interop_name: wren exited at start (attempt $attempt):" >&2
		tail -n 5 "$dir/wren.log" >&2
	done
	return 1
}

# cluster: scripts/local-cluster.sh with this run's directory, binary and ports.
cluster() { CLUSTER_DIR="$work/cluster" WREN_BIN="$wren" BASE_PORT=$base_port "$root/scripts/local-cluster.sh" "$@"; }
node_addr() { echo "127.0.0.1:$((base_port + 10 * $1))"; }
all_nodes() { echo "$(node_addr 1),$(node_addr 2),$(node_addr 3)"; }

start_cluster() {
	# shellcheck source=scripts/cluster-ports.sh
	source "$root/scripts/cluster-ports.sh"
	base_port=$(free_base_port)
	local conf
	conf=$(cluster config)
	printf '%s\n' "${extra_config:-}" >>"$conf"
	# A script may change the config further (interop.sh adds SASL_SSL listeners).
	if declare -F cluster_configure >/dev/null; then cluster_configure "$conf"; fi
	cluster start >"$work/logs/cluster-start.log"
	cluster_up=1
	echo "$interop_name: [3 nodes] clients $(all_nodes), config $conf"
	cluster_wait_healthy 90 || { echo "$interop_name: the cluster did not become healthy within 90 s" >&2; return 1; }
}

# cluster_wait_healthy SECONDS: until `wren cluster health` says healthy (a controller, every
# node up, no partition leaderless or under-replicated), or SECONDS pass.
cluster_wait_healthy() {
	local deadline=$((SECONDS + $1))
	while ! "$wren" cluster health -b "$(all_nodes)" --timeout 5s >"$work/logs/health.log" 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

# metadata [TOPIC]: kcat -L from the bootstrap node.
metadata() { tmo kcat -L -m 10 -b "$bootstrap" ${1:+-t "$1"}; }

# cluster_roles: controller (as the nodes report it), boot_node (a node that is not the
# controller), third (neither); bootstrap is boot_node's address.
cluster_roles() {
	local md deadline=$((SECONDS + 30))
	while :; do
		md=$(kcat -L -m 10 -b "$(all_nodes)" 2>/dev/null || true)
		controller=$(awk '/\(controller\)/ { print $2; exit }' <<<"$md")
		[[ $controller =~ ^[123]$ ]] && break
		((SECONDS < deadline)) || { echo "$interop_name: no controller named within 30 s" >&2; return 1; }
		sleep 0.5
	done
	boot_node=$((controller % 3 + 1))
	third=$((6 - controller - boot_node))
	bootstrap=$(node_addr "$boot_node")
}

# group_on NODE PREFIX: a group id starting with PREFIX whose coordinator is NODE: the leader of
# its __consumer_offsets partition, Java's String.hashCode of the id, absolute, modulo the
# partition count. On one node, PREFIX itself.
group_on() {
	if [[ $target == single ]]; then
		echo "$2"
		return
	fi
	local md rc deadline=$((SECONDS + 30))
	# __consumer_offsets appears once the controller has created it, soon after the cluster
	# formed: until then, look again.
	while :; do
		md=$(metadata __consumer_offsets 2>&1 || true)
		rc=0
		MD="$md" $py - "$1" "$2" <<'PY' || rc=$?
import os, re, sys
node, prefix = int(sys.argv[1]), sys.argv[2]
leaders = {}
for line in os.environ["MD"].splitlines():
    m = re.match(r"\s+partition (\d+), leader (-?\d+),", line)
    if m:
        leaders[int(m.group(1))] = int(m.group(2))
if not leaders or min(leaders.values()) < 0:
    sys.exit(3)
def partition_for(group):
    h, b = 0, group.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (31 * h + (b[i] << 8 | b[i + 1])) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % len(leaders)
for k in range(1, 1000):
    group = "%s-%d" % (prefix, k)
    if leaders.get(partition_for(group)) == node:
        print(group)
        sys.exit(0)
sys.exit("group_on: no group id %s-K led by node %d" % (prefix, node))
PY
		[[ $rc == 3 ]] || return "$rc"
		if ((SECONDS >= deadline)); then
			echo "group_on: no __consumer_offsets partitions with leaders in the metadata after 30 s:" >&2
			echo "$md" >&2
			return 1
		fi
		sleep 0.5
	done
}

# group_for PREFIX: "GROUP NODE": a group id starting with PREFIX and its coordinator NODE, which
# is not the bootstrap node: on a cluster the third node if it leads a __consumer_offsets
# partition, else the controller (after a node was restarted, the others may lead them all
# until leadership is rebalanced). On one node, PREFIX and 1.
group_for() {
	if [[ $target == single ]]; then
		echo "$1 1"
		return
	fi
	local node group
	for node in "$third" "$controller"; do
		if group=$(group_on "$node" "$1" 2>/dev/null); then
			echo "$group $node"
			return
		fi
	done
	echo "group_for: no group id $1-K led by node $third or node $controller" >&2
	return 1
}

# coordinator_of GROUP: the coordinator's node id as FindCoordinator at the bootstrap node
# names it (through wren group describe --state; the group must exist).
coordinator_of() {
	"$wren" group describe "$1" --state -b "$bootstrap" 2>/dev/null |
		awk 'NR == 2 { if (match($0, /\(([0-9]+)\)/)) print substr($0, RSTART + 1, RLENGTH - 2) }'
}

# create_topic TOPIC PARTITIONS LOG: with rf replicas, then wait until the bootstrap node's
# metadata gives every partition a leader and rf in-sync replicas.
create_topic() {
	"$wren" topic create "$1" -p "$2" -r "$rf" -b "$bootstrap" >>"$3" 2>&1 || return 1
	local deadline=$((SECONDS + 30)) md good
	while :; do
		md=$(metadata "$1" 2>/dev/null || true)
		good=$(awk -v rf="$rf" '/^    partition [0-9]+, leader [0-9]+, replicas: / {
			sub(/,$/, "", $6); n = split($6, r, ","); m = split($8, s, ","); if (n == rf && m == rf) g++ } END { print g + 0 }' <<<"$md")
		[[ $good == "$2" ]] && return 0
		if ((SECONDS >= deadline)); then
			echo "create_topic: $1: $good of $2 partitions led with $rf in-sync replicas after 30 s" >>"$3"
			echo "$md" >>"$3"
			return 1
		fi
		sleep 0.2
	done
}

# high_watermarks TOPIC: the sum of the topic's partitions' high watermarks, as far as the
# bootstrap node can tell now (a partition it cannot reach adds nothing).
high_watermarks() {
	{ "$wren" offsets "$1" -b "$bootstrap" --timeout 3s 2>/dev/null || true; } |
		awk -F: '$3 ~ /^[0-9]+$/ { s += $3 } END { print s + 0 }'
}

# wait_led_elsewhere TOPIC NODE: until the bootstrap node's metadata has every partition of TOPIC
# led by a node other than NODE, or 60 s pass (then 1).
wait_led_elsewhere() {
	local deadline=$((SECONDS + 60))
	until metadata "$1" 2>/dev/null | awk -v node="$2" '
		/^    partition [0-9]+, leader / { n++; l = $4; sub(/,$/, "", l); if (l == node || l < 0) bad++ }
		END { exit !(n > 0 && bad == 0) }'; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# wait_high_watermarks TOPIC MIN PID: until the topic's high watermarks add up to MIN or more,
# the process PID (a producer) exits, or 60 s pass (then 1).
wait_high_watermarks() {
	local deadline=$((SECONDS + 60))
	while (($(high_watermarks "$1") < $2)); do
		kill -0 "$3" 2>/dev/null || return 0
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# ---- faults (target kill) -------------------------------------------------------------------
# A step that runs under faults calls fault_start VICTIM before its clients start, fault_mid
# (SIGKILL the victim) and fault_end (start it again) while they run, then fault_heal after
# they finished. On the other targets these do nothing. fault_note describes what happened, for
# the check's line.

fault_note=""
fault_victim=""
fault_start() {
	fault_victim=""
	fault_note=""
	[[ $target == kill ]] || return 0
	fault_victim=$1
	fault_killed_at=0
}
fault_mid() {
	[[ -n $fault_victim ]] || return 0
	cluster kill "$fault_victim" >>"$work/logs/faults.log" 2>&1
	fault_killed_at=$SECONDS
	echo "$(date -u +%T) node $fault_victim SIGKILLed (${1:-})" >>"$work/logs/faults.log"
}
fault_end() {
	[[ -n $fault_victim ]] || return 0
	cluster start "$fault_victim" >>"$work/logs/faults.log" 2>&1
	echo "$(date -u +%T) node $fault_victim restarted" >>"$work/logs/faults.log"
	fault_note="node $fault_victim SIGKILLed mid-run, restarted after $((SECONDS - fault_killed_at)) s"
}
# fault_heal: before the next step, the cluster whole again: every node up and in every ISR.
fault_heal() {
	[[ $target == kill ]] || return 0
	if ! cluster_wait_healthy 90; then
		fail "the cluster is not healthy 90 s after node ${fault_victim:-?} was restarted" "$work/logs/health.log"
		return 1
	fi
	cluster_roles
}
