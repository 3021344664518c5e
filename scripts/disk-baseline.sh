#!/usr/bin/env bash
# disk-baseline.sh: measure what the disk under a directory can do, as the yardstick for the
# broker's own figures: a produce path that fdatasyncs per group commit can never beat the
# fdatasync rate measured here, nor stream faster than the sequential bandwidth.
#
# Usage: scripts/disk-baseline.sh [DIR]       (default: the current directory)
#
# Measures, in a temporary file inside DIR (removed afterwards):
#   1. sequential write bandwidth, 1 MiB blocks: O_DIRECT (dd oflag=direct), and through the page
#      cache with one fdatasync at the end (dd conv=fdatasync); sequential read bandwidth with
#      O_DIRECT (dd iflag=direct)
#   2. fdatasync rate: sequential appends of 1 KiB, 4 KiB and 16 KiB, each followed by fdatasync
#      (fio --fdatasync=1 when fio is installed; otherwise dd oflag=dsync, i.e. O_DSYNC writes)
#
# Environment:
#   WREN_DISK_MB       size of the sequential test in MiB (default 512)
#   WREN_DISK_SECONDS  duration of each fdatasync test in seconds (default 5)
# Run it on an idle machine; other I/O on the same disk lowers every figure.
set -euo pipefail

dir="${1:-.}"
mb="${WREN_DISK_MB:-512}"
secs="${WREN_DISK_SECONDS:-5}"

if [[ ! -d "$dir" || ! -w "$dir" ]]; then
	echo "disk-baseline: $dir is not a writable directory" >&2
	exit 2
fi
tmp="$(mktemp -d "$dir/.disk-baseline.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

fstype="$(stat -f -c %T "$tmp")"
device="$(df -P "$tmp" | awk 'NR == 2 { print $1 }')"
echo "disk-baseline: $(cd "$dir" && pwd) on $device ($fstype)"
case "$fstype" in
tmpfs | ramfs) echo "disk-baseline: warning: $fstype is memory, not a disk" >&2 ;;
esac

# dd_rate prints dd's rate (last field pair of its summary line) in MB/s, as dd reports it.
dd_rate() {
	local line
	line="$(LC_ALL=C dd "$@" 2>&1 | tail -n 1)"
	# "536870912 bytes (537 MB, 512 MiB) copied, 1.2 s, 447 MB/s"
	awk -v l="$line" 'BEGIN {
		n = split(l, f, ", ");
		split(f[n], r, " ");
		v = r[1]; u = r[2];
		if (u == "GB/s") v *= 1000; else if (u == "kB/s") v /= 1000; else if (u == "B/s") v /= 1e6;
		printf "%.0f", v }'
}

direct="$(dd_rate if=/dev/zero of="$tmp/seq" bs=1M count="$mb" oflag=direct)"
# Reading the same file back with O_DIRECT bypasses the page cache: the disk's own read
# bandwidth, the yardstick for the scrubber's rate cap (log.scrubber.io.max.bytes.per.second).
readdirect="$(dd_rate if="$tmp/seq" of=/dev/null bs=1M iflag=direct)"
rm -f "$tmp/seq"
sync
fdsync="$(dd_rate if=/dev/zero of="$tmp/seq" bs=1M count="$mb" conv=fdatasync)"
rm -f "$tmp/seq"

# sync_rate BYTES prints fdatasyncs per second for appends of BYTES, each followed by fdatasync.
sync_rate() {
	local bs="$1"
	if command -v fio >/dev/null 2>&1; then
		# A fresh file and no preallocation: every write extends the file, like a segment append,
		# so each fdatasync also commits the new file size. Terse field 49 = write IOPS.
		fio --name=fdatasync --directory="$tmp" --filename="sync-$bs" --rw=write --bs="$bs" \
			--fdatasync=1 --fallocate=none --size=1g --runtime="$secs" --time_based=0 \
			--ioengine=psync --output-format=terse --terse-version=3 |
			awk -F';' '{ printf "%.0f", $49 }'
		rm -f "$tmp/sync-$bs"
	else
		# O_DSYNC on each write is what fdatasync after each write costs. Enough writes for about
		# $secs seconds on a fast disk; the rate comes from the count and the elapsed time.
		local count=$((secs * 2000)) start end
		start="$(date +%s.%N)"
		dd if=/dev/zero of="$tmp/sync-$bs" bs="$bs" count="$count" oflag=dsync status=none
		end="$(date +%s.%N)"
		awk -v c="$count" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", c / (e - s) }'
		rm -f "$tmp/sync-$bs"
	fi
}

tool="dd"
command -v fio >/dev/null 2>&1 && tool=fio
s1k="$(sync_rate 1024)"
s4k="$(sync_rate 4096)"
s16k="$(sync_rate 16384)"

cat <<OUT
sequential read, 1 MiB blocks, $mb MiB:
  O_DIRECT                         $readdirect MB/s
sequential write, 1 MiB blocks, $mb MiB:
  O_DIRECT                         $direct MB/s
  page cache + final fdatasync     $fdsync MB/s
fdatasync after every append ($tool, ${secs}s each):
  1 KiB writes                     $s1k fdatasyncs/s  ($(awk -v r="$s1k" 'BEGIN { printf "%.2f", r * 1024 / 1e6 }') MB/s)
  4 KiB writes                     $s4k fdatasyncs/s  ($(awk -v r="$s4k" 'BEGIN { printf "%.2f", r * 4096 / 1e6 }') MB/s)
  16 KiB writes                    $s16k fdatasyncs/s  ($(awk -v r="$s16k" 'BEGIN { printf "%.2f", r * 16384 / 1e6 }') MB/s)
OUT
