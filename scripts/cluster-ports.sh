# cluster-ports.sh: sourced by the scripts that start scripts/local-cluster.sh, which gives node N
# the ports BASE_PORT+10*N, +10*N+1 and +10*N+2 (N = 1, 2, 3); a script may give a node one
# more listener on BASE_PORT+10*N+3 (interop.sh's SASL_SSL).
#
# free_base_port prints a BASE_PORT whose twelve ports nothing on 127.0.0.1 listens on or holds:
# a random multiple of 100 below the kernel's ephemeral port range, then each of the twelve
# bound and released. Another process may still take one before wren binds it; a node that then fails
# to start says so in its log.
free_base_port() {
	local attempt
	for attempt in $(seq 1 50); do
		if base=$(/usr/bin/python3 - <<'PY'
import random, socket, sys
# Below the kernel's ephemeral range: a port free now must stay free until
# wren binds it, and outgoing connections take ephemeral ports meanwhile.
hi = 32768
try:
    first = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    if first > 12000:
        hi = first
except (OSError, ValueError, IndexError):
    pass
base = random.randrange(10000, hi - 100) // 100 * 100
held = []
try:
    for n in (1, 2, 3):
        for off in (0, 1, 2, 3):
            t = socket.socket()
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            t.bind(("127.0.0.1", base + 10 * n + off))
            held.append(t)
except OSError:
    sys.exit(1)
finally:
    for t in held:
        t.close()
print(base)
PY
		); then
			echo "$base"
			return 0
		fi
	done
	echo "cluster-ports: no free block of ports on 127.0.0.1 after 50 tries" >&2
	return 1
}
