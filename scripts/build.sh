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
# The packages only the admin CLI runs (franz-go's client and admin
# helpers, the CLI itself and its flag parser, the config parser used at
# start), ops (HTTP probes, /metrics and health: per scrape, never per
# Kafka request), and the standard library's certificate, ECDSA, TLS
# handshake message (cryptobyte), ASN.1, JSON, big-number,
# regular-expression, formatting and logging code (run per TLS handshake,
# config load, metadata record or heartbeat, error, checkpoint or log line,
# never per produce, fetch or replica fetch), are compiled without
# inlining: about 650 KiB less on amd64. So are the control plane's
# packages (the broker's assembly, the metadata log and controller, the
# group coordinator, health, SASL and ACLs, the uplink's own code: run per
# metadata record, group request, authentication or link batch, never per
# record): about 100 KiB more. So are the transaction coordinator (txn/...,
# per transaction request), the election and the metadata log's wal, and
# crypto/tls (handshakes; per TLS record only the framing around the AEAD).
# See docs/ARCHITECTURE.md, "Binary size".
noinline=""
for p in github.com/twmb/franz-go/pkg/kgo/... github.com/twmb/franz-go/pkg/kadm \
	github.com/wren-broker/wren/cli github.com/urfave/cli/v2 \
	github.com/wren-broker/wren/config github.com/pelletier/go-toml/v2/... \
	github.com/wren-broker/wren/ops github.com/wren-broker/wren/broker github.com/wren-broker/wren/cluster/... \
	github.com/wren-broker/wren/groups/... github.com/wren-broker/wren/internal/health \
	github.com/wren-broker/wren/security/... github.com/wren-broker/wren/uplink github.com/wren-broker/wren/txn/... \
	github.com/wren-broker/wren/election github.com/wren-broker/wren/wal crypto/tls \
	crypto/x509 crypto/ecdsa vendor/golang.org/x/crypto/cryptobyte encoding/asn1 \
	encoding/json math/big regexp regexp/syntax fmt log/slog; do
	noinline="$noinline -gcflags=$p=-l"
done
# shellcheck disable=SC2086 # one word per flag
CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags urfave_cli_no_docs $noinline \
	-ldflags "-s -w -buildid= -X $pkg.Version=$WREN_VERSION -X $pkg.Commit=$WREN_COMMIT" -o "$out" .
