#!/usr/bin/env bash
# house-figures.sh: the static figures of the house's layering (issue 19) for a checkout of
# wren: the package graph of kafka, cluster/quorum and replication, and the controller's size.
# Give it another checkout (a `git worktree add` of an older commit) to compare; the method
# count runs this checkout's scripts/controller-methods.go over that checkout's cluster/.
#
# Usage: scripts/house-figures.sh [CHECKOUT]    (default: this checkout)
# Prints, one `key=value` line per figure:
#   deps PKG       `go list -deps ./PKG | wc -l` (all=) and its packages of this module (module=)
#   quorum_engine  the engine packages cluster/quorum reaches (0 is the rule)
#   cluster_lines  lines of non-test Go in cluster/*.go (files=, lines=), and of the controller's
#                  driver files (controller*.go), pure core (core*.go) and quorum glue (quorum*.go)
#   methods        methods on *Controller: `grep -c 'func (c \*Controller)'` (grep=) and parsed
#                  by go/ast (controller-methods.go)
#   mode_branches  `c.q != nil` and `c.q == nil` (the one-voter/quorum forks of the controller)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tree="$(cd "${1:-$(dirname "$here")}" && pwd)"
[[ -f "$tree/go.mod" && -d "$tree/cluster" ]] || { echo "house-figures: $tree is not a wren checkout" >&2; exit 2; }
methods_go="$here/controller-methods.go"

cd "$tree"
echo "tree commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
for p in kafka cluster/quorum replication; do
	deps=$(go list -deps "./$p")
	echo "deps $p all=$(wc -l <<<"$deps") module=$(grep -c wren-broker <<<"$deps" || true)"
done
echo "quorum_engine count=$(go list -deps ./cluster/quorum | grep -c wren/engine || true)"

lines() { # GLOB: files and lines of the non-test files matching cluster/GLOB
	local f files=() n=0
	for f in cluster/$1; do
		[[ -f "$f" && "$f" != *_test.go ]] && files+=("$f")
	done
	((${#files[@]} > 0)) && n=$(cat "${files[@]}" | wc -l)
	echo "files=${#files[@]} lines=$n"
}
echo "cluster_lines all $(lines '*.go')"
echo "cluster_lines controller*.go $(lines 'controller*.go')"
echo "cluster_lines core*.go $(lines 'core*.go')"
echo "cluster_lines quorum*.go $(lines 'quorum*.go')"

nontest=()
for f in cluster/*.go; do [[ "$f" != *_test.go ]] && nontest+=("$f"); done
echo "methods grep=$(cat "${nontest[@]}" | grep -c 'func (c \*Controller)' || true) $(go run "$methods_go" cluster)"
echo "mode_branches q_not_nil=$(cat "${nontest[@]}" | grep -c 'c\.q != nil' || true) q_nil=$(cat "${nontest[@]}" | grep -c 'c\.q == nil' || true)"
