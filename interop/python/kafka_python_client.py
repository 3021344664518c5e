"""Produce and consume the interop records with kafka-python (pure Python).

Usage:
  kafka_python_client.py codecs
  kafka_python_client.py produce BOOTSTRAP TOPIC CODEC EXPECTED
  kafka_python_client.py consume BOOTSTRAP TOPIC DUMP [--timeout S]

codecs prints one line per codec: "CODEC ok", or "CODEC missing: WHY" when
the Python library kafka-python needs for it is not installed (it brings
gzip only; snappy, lz4 and zstd come from python-snappy, lz4 and
zstandard). produce and consume work as in confluent_client.py.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import records  # noqa: E402

import kafka  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka import codec as kcodec  # noqa: E402

# The library kafka-python imports for each codec, and its own check.
CODECS = [
    ("none", None, lambda: True),
    ("gzip", "gzip (standard library)", kcodec.has_gzip),
    ("snappy", "python-snappy (module snappy)", kcodec.has_snappy),
    ("lz4", "lz4 (module lz4.frame)", kcodec.has_lz4),
    ("zstd", "zstandard (module zstandard)", kcodec.has_zstd),
]


def client_config(args):
    # kafka-python 2.0.2 guesses the broker's version: ApiVersions v0
    # pipelined with Metadata v0, then the newest of its test cases that the
    # advertised ranges allow. Against wren it finds (2, 4, 0) (Produce v8
    # is served; DescribeAcls, its (2, 5, 0) case, is not). With that it
    # sends Produce v7, Fetch v4, ListOffsets v1 and Metadata v1 (record
    # batch v2, so headers, and zstd from (2, 1, 0)), all served, so no
    # api_version is pinned here. --api-version skips the probe.
    conf = {"bootstrap_servers": args.bootstrap}
    if args.api_version:
        conf["api_version"] = tuple(int(x) for x in args.api_version.split("."))
    return conf


def codecs(args):
    for name, lib, available in CODECS:
        if available():
            print("%s ok" % name)
        else:
            print("%s missing: kafka-python %s finds no %s" % (name, kafka.__version__, lib))


def produce(args):
    # acks=all; kafka-python has no idempotent producer, so nothing asks
    # for InitProducerId (which wren does not serve yet).
    # Retries (kafka-python's default is none) carry a send across a partition
    # leader's failover on a cluster: without idempotence a retried batch may
    # be written twice, which the at-least-once check allows.
    p = KafkaProducer(
        compression_type=None if args.codec == "none" else args.codec,
        acks="all",
        linger_ms=5,
        retries=30,
        retry_backoff_ms=500,
        **client_config(args),
    )
    try:
        futures = []
        for key, value, headers in records.iter_expected(args.expected):
            hdrs = [(k, v.encode()) for k, v in headers]
            futures.append(p.send(args.topic, key=key.encode(), value=value.encode(), headers=hdrs))
        p.flush(timeout=args.timeout)
        failed = [f for f in futures if not f.succeeded()]
        if failed:
            sys.exit("kafka-python produce: %d of %d sends failed, first: %r" % (len(failed), len(futures), failed[0].exception))
    finally:
        p.close(timeout=10)


def consume(args):
    # No group (group_id=None): partitions are read by assignment, since wren
    # has no group coordinator yet.
    c = KafkaConsumer(group_id=None, enable_auto_commit=False, auto_offset_reset="earliest", **client_config(args))
    try:
        deadline = time.monotonic() + args.timeout
        partitions = None
        while partitions is None:
            partitions = c.partitions_for_topic(args.topic)
            if partitions is None and time.monotonic() > deadline:
                sys.exit("kafka-python consume: topic %s not in metadata" % args.topic)
        tps = [TopicPartition(args.topic, p) for p in sorted(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        ends = {tp.partition: off for tp, off in c.end_offsets(tps).items()}
        pos = {tp.partition: 0 for tp in tps}
        with open(args.dump, "w", encoding="utf-8") as out:
            while any(pos[p] < ends[p] for p in pos):
                if time.monotonic() > deadline:
                    sys.exit("kafka-python consume: deadline with positions %s, ends %s" % (pos, ends))
                for tp, msgs in c.poll(timeout_ms=1000, max_records=2000).items():
                    for m in msgs:
                        hdrs = [(k, v.decode()) for k, v in (m.headers or [])]
                        out.write(records.dump_line(m.partition, m.offset, m.key.decode(), m.value.decode(), hdrs))
                        pos[m.partition] = m.offset + 1
    finally:
        c.close(autocommit=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api-version", default="", help="skip kafka-python's broker version probe, e.g. 2.4.0")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("codecs").set_defaults(func=codecs)
    p = sub.add_parser("produce")
    p.add_argument("bootstrap")
    p.add_argument("topic")
    p.add_argument("codec")
    p.add_argument("expected")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=produce)
    c = sub.add_parser("consume")
    c.add_argument("bootstrap")
    c.add_argument("topic")
    c.add_argument("dump")
    c.add_argument("--timeout", type=float, default=120)
    c.set_defaults(func=consume)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
