#!/bin/sh
# Builds wren's release binary: static (CGO_ENABLED=0), reproducible
# (-trimpath, -buildvcs=false, no build id) and stamped with its version and
# commit for `wren version`.
#
#   scripts/build.sh [OUTPUT]                 # ./wren by default
#   GOARCH=arm64 scripts/build.sh wren-arm64
#   GOARCH=arm GOARM=7 scripts/build.sh wren-armv7
#
# WREN_VERSION and WREN_COMMIT override what git says.
set -eu
out=${1:-wren}
case $out in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")/.."
if [ -z "${WREN_COMMIT:-}" ]; then
	WREN_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	if [ "$WREN_COMMIT" != unknown ] && ! git diff --quiet HEAD 2>/dev/null; then
		WREN_COMMIT="$WREN_COMMIT-dirty"
	fi
fi
WREN_VERSION=${WREN_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
pkg=github.com/wren-broker/wren/internal/buildinfo
CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags urfave_cli_no_docs \
	-ldflags "-s -w -buildid= -X $pkg.Version=$WREN_VERSION -X $pkg.Commit=$WREN_COMMIT" -o "$out" .
