#!/usr/bin/env bash
# kafka-dump-log.sh: check segment files with Apache Kafka's own DumpLogSegments (the class behind
# Kafka's kafka-dump-log tool), so that files the engine writes are proven readable by Kafka.
#
# Usage: scripts/kafka-dump-log.sh [-v] FILE|DIR...
#   FILE  a .log, .index, .timeindex, .txnindex or .snapshot file; an index is checked against
#         the .log of the same base offset beside it
#   DIR   a partition directory: every .log, .index, .timeindex, .txnindex and .snapshot in it
#   -v    also print Kafka's full output
#
# Checks, per kind of file:
#   .log         --deep-iteration: every batch's CRC (isvalid), every record of every batch
#                decompressed and parsed, no bytes left over after the last whole batch
#   .index       --index-sanity-check (the check a broker runs at startup), --verify-index-only
#   .timeindex   (every entry matches the .log), and our own order check: entries strictly
#                increasing, and after the first all-zero entry (Kafka's preallocated tail, where
#                DumpLogSegments stops looking) nothing but zeros
#   .snapshot    the producer-state snapshot parses and its CRC matches
#   .txnindex    the transaction index parses (Kafka reads every aborted-transaction entry), and
#                DumpLogSegments prints one entry per 34 bytes of the file
# Exits 0 when every file passes, 1 when any fails (the offending lines are printed), 2 on usage
# errors. Needs java 17+ and the classpath of kafka-fetch.sh (called; a no-op once cached).
#
# Runs one JVM per directory and kind of check; only when that run reports a problem are the
# files run again one by one, to name the guilty file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

verbose=false
if [[ "${1:-}" == "-v" ]]; then
	verbose=true
	shift
fi
if [[ $# -eq 0 ]]; then
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
fi

files=()
for arg in "$@"; do
	if [[ -d "$arg" ]]; then
		shopt -s nullglob
		found=("$arg"/*.log "$arg"/*.index "$arg"/*.timeindex "$arg"/*.txnindex "$arg"/*.snapshot)
		shopt -u nullglob
		if [[ ${#found[@]} -eq 0 ]]; then
			echo "kafka-dump-log: $arg holds no segment files" >&2
			exit 2
		fi
		files+=("${found[@]}")
	elif [[ -f "$arg" ]]; then
		files+=("$arg")
	else
		echo "kafka-dump-log: $arg: no such file or directory" >&2
		exit 2
	fi
done

libs="$("$here/kafka-fetch.sh")"
home="$(dirname "$libs")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# What DumpLogSegments (Kafka 4.1) prints when something is wrong, found by corrupting copies of
# golden segments (testdata/kafka4/README.md lists each case). Its exit code is 0 for most
# of these, so the output is what counts:
#   "isvalid: false"                               batch CRC mismatch
#   "Found N invalid bytes at the end of"          torn last batch, short trailing garbage
#   "Mismatches in :"                              offset index entry names the wrong offset
#   "The following indexed offsets are not found"  time index entry names a missing offset
#   "Found timestamp mismatch" / "out of order"    time index entry disagrees with the log
#   "Snapshot is corrupt"                          producer snapshot CRC mismatch
#   "Exception in thread" (exit 1)                 CorruptRecordException, InvalidRecordException,
#                                                  CorruptIndexException, decompression errors
# Payloads are never printed (no --print-data-log), and record lines ("| offset: ...", which name
# header keys) are left out of the match, so record contents cannot trigger these.
bad='isvalid: false|^Found |Mismatches in|not found in the log|mismatch|out of order|[Ee]xception|[Ee]rror|[Cc]orrupt|[Ff]ailed|[Ii]nvalid'

failed=0

# problems FILE prints the lines of FILE that report a problem; fails if there are none.
problems() {
	grep -v '^| ' "$1" | grep -E "$bad"
}

# dump MODE DIR NAME... runs DumpLogSegments once on the named files of DIR (from inside DIR, so
# an index finds its .log by name); output in $tmp/out, returns its exit code.
dump() {
	local mode="$1" dir="$2"
	shift 2
	local list args=()
	list="$(printf '%s,' "$@")"
	case "$mode" in
	log) args=(--deep-iteration) ;;
	sanity) args=(--index-sanity-check) ;;
	verify) args=(--verify-index-only) ;;
	snapshot | txnindex) args=() ;;
	esac
	local rc=0
	(cd "$dir" && java -cp "$libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" \
		kafka.tools.DumpLogSegments "${args[@]}" --files "${list%,}") >"$tmp/out" 2>&1 || rc=$?
	if $verbose; then
		cat "$tmp/out"
	fi
	return "$rc"
}

# judge MODE FILE RC OUTPUT prints the verdict for one file whose output is in OUTPUT.
judge() {
	local mode="$1" file="$2" rc="$3" out="$4"
	if [[ "$rc" -ne 0 ]] || problems "$out" >/dev/null; then
		echo "FAIL $file ($mode, exit $rc):"
		{ problems "$out" || tail -n 5 "$out"; } | grep -v '^[[:space:]]*at ' | head -n 20 |
			sed 's/^/    /' || true
		failed=1
	elif [[ "$mode" == log ]] && ! grep -q '^Log starting offset:' "$out"; then
		echo "FAIL $file ($mode): DumpLogSegments did not read it:"
		head -n 5 "$out" | sed 's/^/    /'
		failed=1
	elif [[ "$mode" == txnindex ]] &&
		[[ "$(grep -c '^version: 0 producerId: ' "$out" || true)" -ne $(($(stat -c %s "$file") / 34)) ]]; then
		echo "FAIL $file ($mode): DumpLogSegments printed $(grep -c '^version: 0 producerId: ' "$out" || true) entries for $(stat -c %s "$file") bytes:"
		head -n 5 "$out" | sed 's/^/    /'
		failed=1
	else
		echo "ok   $file ($mode)"
	fi
}

# check MODE DIR NAME...: fast path, one JVM for all; slow path, one JVM per file, only when the
# fast path saw a problem (an exception stops DumpLogSegments at the bad file).
check() {
	local mode="$1" dir="$2"
	shift 2
	local rc=0 name
	dump "$mode" "$dir" "$@" || rc=$?
	if [[ $rc -eq 0 ]] && ! problems "$tmp/out" >/dev/null; then
		# Split the output at each "Dumping NAME" line; every file must have its own part.
		rm -rf "$tmp/parts"
		mkdir "$tmp/parts"
		awk -v dir="$tmp/parts" '/^Dumping / { f = dir "/" $2 } f != "" { print > f }' "$tmp/out"
		local all=true
		for name in "$@"; do
			[[ -f "$tmp/parts/$name" ]] || all=false
		done
		if $all; then
			for name in "$@"; do
				judge "$mode" "$dir/$name" 0 "$tmp/parts/$name"
			done
			return
		fi
	fi
	for name in "$@"; do
		rc=0
		dump "$mode" "$dir" "$name" || rc=$?
		judge "$mode" "$dir/$name" "$rc" "$tmp/out"
	done
}

# check_order FILE: entries strictly increasing (offset index: relative offset and position;
# time index: timestamp and relative offset, offsets may repeat), then only zeros. DumpLogSegments
# stops at the first entry whose offset equals the base offset, taking it for the preallocated
# tail, so a bad entry there would go unseen by it.
check_order() {
	local file="$1" width=8
	[[ "$file" == *.timeindex ]] && width=12
	local verdict
	verdict="$(od -An -v -tx1 -w"$width" "$file" | awk -v w="$width" '
		# Reads to the end even after a verdict, so od never dies of a closed pipe.
		verdict != "" || NF == 0 { next }
		{ e = ""; for (i = 1; i <= NF; i++) e = e $i }
		NF != w { verdict = "entry " n " is " NF " bytes, not " w; next }
		w == 8  { a = substr(e, 1, 8); b = substr(e, 9, 8) }    # relative offset, position
		w == 12 { a = substr(e, 1, 16); b = substr(e, 17, 8) }   # timestamp, relative offset
		{
			zero = (e ~ /^0+$/)
			if (tail && !zero) { verdict = "non-zero entry " n " after the zero tail"; next }
			if (n > 0 && zero) tail = 1
			else if (n > 0 && !(a > pa && (w == 12 ? b >= pb : b > pb))) {
				verdict = "entry " n " (" a " " b ") does not follow entry " n - 1 " (" pa " " pb ")"; next
			}
			if (!tail) { pa = a; pb = b }
			n++
		}
		END { if (verdict != "") print verdict }')"
	# Hex strings of one width compare like the unsigned numbers they spell.
	if [[ -n "$verdict" ]]; then
		echo "FAIL $file (order): $verdict"
		failed=1
	else
		echo "ok   $file (order)"
	fi
}

# Group the files by directory and kind. A name with a comma cannot go in --files, and the
# groups are space-separated lists, so such names are refused (segment names never have them).
declare -A logs=() indexes=() snapshots=() txnindexes=()
for f in "${files[@]}"; do
	dir="$(dirname "$f")"
	name="$(basename "$f")"
	if [[ "$name" == *[[:space:],]* ]]; then
		echo "kafka-dump-log: $f: names with commas or spaces are not supported" >&2
		exit 2
	fi
	case "$name" in
	*.log) logs[$dir]+="$name " ;;
	*.index | *.timeindex) indexes[$dir]+="$name " ;;
	*.snapshot) snapshots[$dir]+="$name " ;;
	*.txnindex) txnindexes[$dir]+="$name " ;;
	*)
		echo "kafka-dump-log: $f: not a .log, .index, .timeindex, .txnindex or .snapshot file" >&2
		exit 2
		;;
	esac
done

for dir in "${!logs[@]}"; do
	# shellcheck disable=SC2086
	check log "$dir" ${logs[$dir]}
done
for dir in "${!indexes[@]}"; do
	# shellcheck disable=SC2086
	check sanity "$dir" ${indexes[$dir]}
	# shellcheck disable=SC2086
	check verify "$dir" ${indexes[$dir]}
	for name in ${indexes[$dir]}; do
		check_order "$dir/$name"
	done
done
for dir in "${!snapshots[@]}"; do
	# shellcheck disable=SC2086
	check snapshot "$dir" ${snapshots[$dir]}
done
for dir in "${!txnindexes[@]}"; do
	# shellcheck disable=SC2086
	check txnindex "$dir" ${txnindexes[$dir]}
done
exit "$failed"
