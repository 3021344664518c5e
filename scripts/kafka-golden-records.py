#!/usr/bin/env python3
"""Helper of kafka-golden.sh: makes the golden records and checks what Kafka wrote.

  generate OUTDIR   write OUTDIR/<run>.txt (lines for Kafka's console producer) and
                    OUTDIR/<run>.jsonl (the same records, exactly, as JSON) for every run
  manifest RUNSDIR DUMPDIR OUT.json KAFKA_VERSION
                    parse DumpLogSegments output (DUMPDIR/<base>.txt, one per segment),
                    check every record against what was produced, write the manifest

The record contents are fixed by SEED, so they are the same on every machine; batch
boundaries, timestamps and producer ids are Kafka's and are read back from its own dump.
"""
import base64
import hashlib
import json
import os
import random
import re
import sys

SEED = 20260401
NULL = "<null>"  # console producer null.marker; no generated field equals it by accident
INLINE_MAX = 256  # values longer than this are given as sha256 + length in the manifest

# (run name, compression codec, idempotent producer, record count)
RUNS = [
    ("01-none", "none", True, 200),
    ("02-gzip", "gzip", True, 200),
    ("03-snappy", "snappy", True, 200),
    ("04-lz4", "lz4", True, 200),
    ("05-zstd", "zstd", True, 200),
    ("06-none-plain", "none", False, 40),
]

WORDS = (
    "edge sensor gateway reading temperature humidity pressure voltage current door "
    "open closed alarm ok warn fault north south east west pump valve meter relay "
    "battery solar wind grid load shed restore sync ack nack retry"
).split()


def value_of(rng, i):
    """A value whose size varies from empty to several KiB; text, so compressible."""
    r = rng.random()
    if r < 0.03:
        return None  # tombstone
    if r < 0.05:
        return ""
    if r < 0.60:
        n = rng.randint(1, 8)
    elif r < 0.90:
        n = rng.randint(9, 70)
    elif r < 0.98:
        n = rng.randint(70, 300)
    else:
        n = rng.randint(300, 900)
    return f"#{i} " + " ".join(rng.choice(WORDS) for _ in range(n))


def key_of(rng):
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.17:
        return ""
    return f"device-{rng.randint(0, 49):02d}"  # keys repeat, as a compacted topic would see


def headers_of(rng):
    r = rng.random()
    if r < 0.35:
        return []
    hs = []
    for _ in range(rng.randint(1, 3)):
        k = rng.choice(["trace-id", "source", "schema", "unit", "retry"])
        v = rng.random()
        if v < 0.10:
            hs.append((k, None))
        elif v < 0.15:
            hs.append((k, ""))
        else:
            hs.append((k, f"{rng.choice(WORDS)}-{rng.randint(0, 999)}"))
    return hs


def field(s):
    return NULL if s is None else s


def generate(outdir):
    rng = random.Random(SEED)
    os.makedirs(outdir, exist_ok=True)
    n = 0
    for name, codec, idem, count in RUNS:
        with open(os.path.join(outdir, name + ".txt"), "w") as txt, open(
            os.path.join(outdir, name + ".jsonl"), "w"
        ) as js:
            for _ in range(count):
                key, value, headers = key_of(rng), value_of(rng, n), headers_of(rng)
                n += 1
                hpart = ",".join(f"{k}:{field(v)}" for k, v in headers) if headers else NULL
                txt.write(f"{hpart}\t{field(key)}\t{field(value)}\n")
                js.write(json.dumps({"key": key, "value": value, "headers": headers}) + "\n")
    with open(os.path.join(outdir, "runs.txt"), "w") as f:
        for name, codec, idem, count in RUNS:
            f.write(f"{name} {codec} {'true' if idem else 'false'} {count}\n")


BATCH_RE = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) "
    r"lastSequence: (-?\d+) producerId: (-?\d+) producerEpoch: (-?\d+) "
    r"partitionLeaderEpoch: (-?\d+) isTransactional: (\w+) isControl: (\w+) "
    r"deleteHorizonMs: \S+ position: (\d+) CreateTime: (-?\d+) size: (\d+) magic: (\d+) "
    r"compresscodec: (\w+) crc: (\d+) isvalid: (\w+)$"
)
RECORD_RE = re.compile(
    r"^\| offset: (\d+) CreateTime: (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) "
    r"sequence: (-?\d+) headerKeys: \[([^\]]*)\](.*)$"
)


def b64(s):
    return None if s is None else base64.b64encode(s.encode()).decode()


def parse_dump(path):
    """Returns (batches, records) from one DumpLogSegments --deep-iteration --print-data-log."""
    batches, records = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = BATCH_RE.match(line)
            if m:
                g = m.groups()
                if g[16] != "true" or g[13] != "2":
                    sys.exit(f"{path}: invalid or non-v2 batch: {line}")
                batches.append(
                    {
                        "base_offset": int(g[0]),
                        "last_offset": int(g[1]),
                        "count": int(g[2]),
                        "base_sequence": int(g[3]),
                        "last_sequence": int(g[4]),
                        "producer_id": int(g[5]),
                        "producer_epoch": int(g[6]),
                        "partition_leader_epoch": int(g[7]),
                        "is_transactional": g[8] == "true",
                        "is_control": g[9] == "true",
                        "position": int(g[10]),
                        "max_timestamp": int(g[11]),
                        "size": int(g[12]),
                        "codec": g[14],
                        "crc": int(g[15]),
                    }
                )
                continue
            m = RECORD_RE.match(line)
            if m:
                off, ts, ks, vs, seq, hkeys, rest = m.groups()
                ks, vs = int(ks), int(vs)
                key = value = None
                # Slice by the sizes Kafka printed, so spaces inside fields cannot mislead us.
                if ks >= 0:
                    if not rest.startswith(" key: "):
                        sys.exit(f"{path}: no key in: {line}")
                    key, rest = rest[6 : 6 + ks], rest[6 + ks :]
                if vs >= 0:
                    if not rest.startswith(" payload: "):
                        sys.exit(f"{path}: no payload in: {line}")
                    value, rest = rest[10 : 10 + vs], rest[10 + vs :]
                if rest:
                    sys.exit(f"{path}: trailing text in: {line}")
                records.append(
                    {
                        "offset": int(off),
                        "timestamp": int(ts),
                        "sequence": int(seq),
                        "key": key,
                        "value": value,
                        "header_keys": hkeys.split(",") if hkeys else [],
                        "batch": batches[-1],
                    }
                )
    return batches, records


def manifest(runsdir, dumpdir, out, kafka_version):
    runs = [l.split() for l in open(os.path.join(runsdir, "runs.txt"))]
    want = []  # (run, codec, idempotent, record)
    for name, codec, idem, _ in runs:
        for line in open(os.path.join(runsdir, name + ".jsonl")):
            want.append((name, codec, idem == "true", json.loads(line)))

    segments, batches, got = [], [], []
    for fn in sorted(os.listdir(dumpdir)):
        if not fn.endswith(".txt"):
            continue
        base = int(fn[: -len(".txt")])
        b, r = parse_dump(os.path.join(dumpdir, fn))
        segments.append({"base_offset": base, "batches": len(b), "records": len(r)})
        for x in b:
            x["segment"] = base
        batches += b
        got += r

    if len(got) != len(want):
        sys.exit(f"manifest: Kafka holds {len(got)} records, {len(want)} were produced")
    records = []
    for i, (g, (run, codec, idem, w)) in enumerate(zip(got, want)):
        # One producer at a time into a fresh single-partition topic: record i is offset i.
        bad = []
        if g["offset"] != i:
            bad.append(f"offset {g['offset']} != {i}")
        if g["key"] != w["key"]:
            bad.append(f"key {g['key']!r} != {w['key']!r}")
        if g["value"] != w["value"]:
            bad.append("value differs")
        if g["header_keys"] != [k for k, _ in w["headers"]]:
            bad.append(f"header keys {g['header_keys']} != {w['headers']}")
        if g["batch"]["codec"] != codec:
            bad.append(f"codec {g['batch']['codec']} != {codec}")
        if (g["batch"]["producer_id"] >= 0) != idem:
            bad.append(f"producer id {g['batch']['producer_id']} but idempotent={idem}")
        if bad:
            sys.exit(f"manifest: record {i} ({run}): " + "; ".join(bad))
        rec = {
            "offset": i,
            "batch_base_offset": g["batch"]["base_offset"],
            "codec": codec,
            "timestamp": g["timestamp"],
            "key": b64(w["key"]),
        }
        v = w["value"]
        if v is not None and len(v) > INLINE_MAX:
            rec["value"] = None
            rec["value_len"] = len(v.encode())
            rec["value_sha256"] = hashlib.sha256(v.encode()).hexdigest()
        else:
            rec["value"] = b64(v)
        rec["headers"] = [{"key": k, "value": b64(hv)} for k, hv in w["headers"]]
        rec["run"] = run
        records.append(rec)

    doc = {
        "kafka_version": kafka_version,
        "topic": "golden",
        "partition": 0,
        "encoding": "key, value and header values are base64 of the exact bytes, or null; "
        f"a value longer than {INLINE_MAX} bytes has value null and value_len + value_sha256",
        "runs": [
            {"run": n, "codec": c, "idempotent": i == "true", "records": int(k)}
            for n, c, i, k in runs
        ],
        "segments": segments,
        "batches": batches,
        "records": records,
    }
    # Pretty at the top, one line per batch and per record: small, and diffs stay readable.
    with open(out, "w") as f:
        f.write("{\n")
        items = list(doc.items())
        for n, (k, v) in enumerate(items):
            f.write(f" {json.dumps(k)}: ")
            if isinstance(v, list):
                f.write("[\n" + ",\n".join("  " + json.dumps(x) for x in v) + "\n ]")
            else:
                f.write(json.dumps(v))
            f.write(",\n" if n < len(items) - 1 else "\n")
        f.write("}\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "generate":
        generate(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "manifest":
        manifest(*sys.argv[2:])
    else:
        sys.exit(__doc__)
