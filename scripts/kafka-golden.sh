#!/usr/bin/env bash
# kafka-golden.sh: regenerate testdata/kafka4/, a partition written by Apache Kafka itself,
# the reference for the on-disk format that the tests of engine, engine/producer and cli and
# scripts/kafka-dump-log-test.sh read (testdata/README.md).
#
# Usage: scripts/kafka-golden.sh [OUTDIR]       (default: testdata/kafka4 of this checkout)
#
# What it does:
#   1. kafka-fetch.sh, then kafka-run.sh starts a single-node KRaft broker in a temporary dir,
#      with a fixed cluster id.
#   2. Creates topic `golden`, 1 partition, with internal.segment.bytes=16384 (Kafka 4 refuses
#      segment.bytes below 1 MiB; this internal topic config is what Kafka's own tests use) and
#      index.interval.bytes=1024, so the partition has many small segments, each with index
#      entries.
#   3. Produces the records of kafka-golden-records.py (fixed seed: same bytes every time) with
#      Kafka's console producer, one run per codec: none, gzip, snappy, lz4, zstd, each with an
#      idempotent producer (Kafka's default), then a short run with idempotence off. Records have
#      keys, null and empty keys, null (tombstone) and empty values, values up to a few KiB, and
#      0-3 headers (with null and empty header values, repeated header keys).
#   4. Stops the broker cleanly (SIGTERM), so Kafka trims the indexes, writes the producer-state
#      snapshots, the checkpoint files and .kafka_cleanshutdown.
#   5. Dumps every segment with Kafka's DumpLogSegments, checks each record against what was
#      produced (offset, key, value, header keys, codec, idempotence) and writes manifest.json.
#   6. Copies golden-0/ and the data-dir files into OUTDIR, with dump-<base>.txt oracles.
#
# Not reproducible byte for byte: timestamps, producer ids, batch boundaries (producer timing) and
# meta.properties' directory.id change per run. Record contents and offsets do not.
# Needs: java 17+, mvn, python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$(cd "$here/.." && pwd)/testdata/kafka4}"
topic=golden

# OUTDIR is replaced whole: refuse a non-empty directory that is not an earlier output.
if [[ -d "$out" && -n "$(ls -A "$out")" && ! -f "$out/manifest.json" ]]; then
	echo "kafka-golden: $out is not empty and holds no manifest.json; not replacing it" >&2
	exit 2
fi

libs="$("$here/kafka-fetch.sh")"
home="$(dirname "$libs")"
version="$(basename "$home")"
version="${version#kafka-}"

tmp="$(mktemp -d)"
cleanup() {
	"$here/kafka-run.sh" stop "$tmp/kafka" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

kafka() {
	java -cp "$libs/*" -Dlog4j2.configurationFile="$home/config/log4j2.yaml" "$@"
}

# Base64url of "wren-golden-data": a fixed cluster id, so meta.properties is stable.
bootstrap="$(WREN_KAFKA_CLUSTER_ID=d3Jlbi1nb2xkZW4tZGF0YQ "$here/kafka-run.sh" start "$tmp/kafka")"
echo "kafka-golden: Kafka $version at $bootstrap" >&2

kafka org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic "$topic" \
	--partitions 1 --replication-factor 1 \
	--config internal.segment.bytes=16384 --config index.interval.bytes=1024 >&2

python3 "$here/kafka-golden-records.py" generate "$tmp/runs"
while read -r run codec idempotent count; do
	echo "kafka-golden: producing $run: $count records, codec $codec, idempotent $idempotent" >&2
	extra=()
	if [[ "$idempotent" == false ]]; then
		# One request in flight keeps order without idempotence.
		extra=(--request-required-acks 1 --producer-property enable.idempotence=false
			--producer-property max.in.flight.requests.per.connection=1)
	fi
	# batch.size 4096 and linger 100 ms: several batches per run, several per segment.
	kafka org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" --topic "$topic" \
		--compression-codec "$codec" --batch-size 4096 --timeout 100 \
		--property parse.key=true --property parse.headers=true --property 'null.marker=<null>' \
		"${extra[@]}" <"$tmp/runs/$run.txt" >&2
done <"$tmp/runs/runs.txt"

"$here/kafka-run.sh" stop "$tmp/kafka"
data="$tmp/kafka/data"
part="$data/$topic-0"
if [[ ! -f "$data/.kafka_cleanshutdown" ]]; then
	echo "kafka-golden: the broker did not shut down cleanly" >&2
	exit 1
fi

# Dump every segment in one JVM, from inside the partition dir so the output names no temp path.
mkdir -p "$tmp/dumps"
logs="$(cd "$part" && printf '%s\n' *.log | paste -sd, -)"
(cd "$part" && kafka kafka.tools.DumpLogSegments --deep-iteration --print-data-log --files "$logs") \
	>"$tmp/dump-all.txt"
awk -v dir="$tmp/dumps" '
	/^Dumping / { f = dir "/" substr($2, 1, length($2) - 4) ".txt" }
	{ if (f == "") { print "unexpected: " $0 > "/dev/stderr"; exit 1 } print > f }
' "$tmp/dump-all.txt"
python3 "$here/kafka-golden-records.py" manifest "$tmp/runs" "$tmp/dumps" "$tmp/manifest.json" "$version"

# Our own checker must pass Kafka's own files.
"$here/kafka-dump-log.sh" "$part" >&2

# The oracle for dump-log: full output for two segments, the first (uncompressed) and the first
# holding a compressed batch.
oracle_dump() {
	local base="$1" f="$2"
	{
		echo "# Apache Kafka $version DumpLogSegments on golden-0/$base.*, from inside golden-0/."
		local args
		for args in "--deep-iteration --print-data-log --files $base.log" \
			"--files $base.index" "--index-sanity-check --files $base.index" \
			"--verify-index-only --files $base.index" \
			"--files $base.timeindex" "--index-sanity-check --files $base.timeindex" \
			"--verify-index-only --files $base.timeindex" "--files $base.snapshot"; do
			[[ -f "$part/${args##* }" ]] || continue
			echo "## kafka-dump-log $args"
			# shellcheck disable=SC2086
			(cd "$part" && kafka kafka.tools.DumpLogSegments $args)
		done
	} >"$f"
}

rm -rf "$out"
mkdir -p "$out"
cp -a "$part" "$out/"
for f in recovery-point-offset-checkpoint log-start-offset-checkpoint replication-offset-checkpoint \
	meta.properties .kafka_cleanshutdown; do
	cp -a "$data/$f" "$out/"
done
cp "$tmp/manifest.json" "$out/"
first="$(cd "$part" && printf '%s\n' *.log | head -n 1)"
first="${first%.log}"
oracle_dump "$first" "$out/dump-$first.txt"
compressed=""
for f in "$tmp"/dumps/*.txt; do
	if grep -q 'compresscodec: \(gzip\|snappy\|lz4\|zstd\)' "$f"; then
		compressed="$(basename "$f" .txt)"
		break
	fi
done
if [[ -n "$compressed" && "$compressed" != "$first" ]]; then
	oracle_dump "$compressed" "$out/dump-$compressed.txt"
fi
echo "kafka-golden: wrote $out" >&2
du -ab "$out" | sort -k2 >&2
