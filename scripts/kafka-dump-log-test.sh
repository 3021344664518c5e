#!/usr/bin/env bash
# kafka-dump-log-test.sh: proves that kafka-dump-log.sh passes Kafka's own golden segments and
# fails each kind of damage: it copies testdata/kafka4/golden-0 to a temporary directory,
# damages one file per case and expects a FAIL line naming that file, and exit status 1.
#
# Usage: scripts/kafka-dump-log-test.sh        (needs what kafka-dump-log.sh needs)
# Prints one line per case and "N passed, N failed"; exits 1 if any case failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
golden="$here/../testdata/kafka4/golden-0"
check="$here/kafka-dump-log.sh"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Segment 0 holds uncompressed batches, segment 200 gzip batches; both have index entries.
plain=00000000000000000000
gz=00000000000000000200
snap=00000000000000000069.snapshot

passed=0
failures=0

fresh() {
	rm -rf "$tmp/p"
	mkdir "$tmp/p"
	cp "$golden/$plain".* "$golden/$gz".* "$golden/$snap" "$tmp/p/"
}

# flip FILE OFFSET inverts the byte at OFFSET.
flip() {
	local b
	b="$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')"
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((b ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# put FILE OFFSET HEXBYTE writes one byte.
put() {
	# shellcheck disable=SC2059
	printf "\\x$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# expect_fail NAME FILE: the checker must exit 1 and print a FAIL line for FILE.
expect_fail() {
	local name="$1" file="$2" rc=0
	"$check" "$tmp/p" >"$tmp/out" 2>&1 || rc=$?
	if [[ $rc -eq 1 ]] && grep -q "^FAIL $tmp/p/$file " "$tmp/out"; then
		# Which checks caught it, and the first thing Kafka (or the order check) said.
		local modes why
		modes="$(grep "^FAIL $tmp/p/$file " "$tmp/out" | sed 's/^[^(]*(\([a-z]*\).*/\1/' | paste -sd, -)"
		why="$(awk -v f="FAIL $tmp/p/$file " 'index($0, f) == 1 { sub(/^[^)]*\): ?/, ""); if ($0 != "") { print; exit } getline; sub(/^ */, ""); print; exit }' "$tmp/out")"
		echo "ok   $name [$modes]: ${why:0:100}"
		passed=$((passed + 1))
	else
		echo "FAIL $name: checker exit $rc, no FAIL line for $file:"
		sed 's/^/    /' "$tmp/out"
		failures=$((failures + 1))
	fi
}

fresh
rc=0
"$check" "$tmp/p" >"$tmp/out" 2>&1 || rc=$?
if [[ $rc -eq 0 ]] && ! grep -q '^FAIL' "$tmp/out"; then
	echo "ok   golden copy passes ($(grep -c '^ok' "$tmp/out") checks)"
	passed=$((passed + 1))
else
	echo "FAIL golden copy does not pass (exit $rc):"
	sed 's/^/    /' "$tmp/out"
	failures=$((failures + 1))
fi

fresh; flip "$tmp/p/$plain.log" 3000
expect_fail "byte flipped in an uncompressed record" "$plain.log"
fresh; flip "$tmp/p/$gz.log" 700
expect_fail "byte flipped in gzip data" "$gz.log"
fresh; flip "$tmp/p/$plain.log" 61
expect_fail "byte flipped in a batch header (attributes)" "$plain.log"
fresh; truncate -s -100 "$tmp/p/$plain.log"
expect_fail "torn last batch" "$plain.log"
fresh; printf '\0\0\0\0\0' >>"$tmp/p/$plain.log"
expect_fail "5 zero bytes after the last batch" "$plain.log"
fresh; head -c 40 /dev/zero | tr '\0' '\377' >>"$tmp/p/$plain.log"
expect_fail "40 bytes of 0xff after the last batch" "$plain.log"
fresh; put "$tmp/p/$plain.index" 11 0a
expect_fail "offset index entry names the wrong offset" "$plain.index"
fresh; put "$tmp/p/$plain.index" 15 71
expect_fail "offset index entry names the wrong position" "$plain.index"
fresh; put "$tmp/p/$plain.index" 19 00
expect_fail "offset index last entry = base offset (unseen by Kafka)" "$plain.index"
fresh; truncate -s 20 "$tmp/p/$plain.index"
expect_fail "offset index cut mid-entry" "$plain.index"
fresh; put "$tmp/p/$plain.timeindex" 19 00
expect_fail "time index timestamp out of order" "$plain.timeindex"
fresh; put "$tmp/p/$plain.timeindex" 23 20
expect_fail "time index entry names a missing offset" "$plain.timeindex"
fresh; truncate -s 30 "$tmp/p/$plain.timeindex"
expect_fail "time index cut mid-entry" "$plain.timeindex"
fresh; flip "$tmp/p/$snap" 40
expect_fail "producer snapshot byte flipped" "$snap"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
