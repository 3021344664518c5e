"""Produce and consume the interop records with confluent-kafka (librdkafka).

Usage:
  confluent_client.py produce BOOTSTRAP TOPIC CODEC EXPECTED
  confluent_client.py consume BOOTSTRAP TOPIC DUMP [--timeout S]
  confluent_client.py transactions BOOTSTRAP [--timeout S]

produce sends every record of EXPECTED (records.py gen) with its key and
headers, compressed with CODEC (none, gzip, snappy, lz4, zstd: librdkafka's
own codecs), and exits non-zero if any delivery failed. consume reads every
partition of TOPIC from the start up to the high watermark it finds at
start (so duplicates in the log show up too) and writes the dump format.
transactions runs a transactional producer (init_transactions, a commit,
an abort, a commit) on its own topic and reads it back with a
read_committed consumer: it exits non-zero unless exactly the committed
records come back.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import records  # noqa: E402

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402


def produce(args):
    # acks=all and idempotence on (librdkafka's default is off): wren
    # serves InitProducerId and checks sequences.
    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "compression.type": args.codec,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
    })
    failures = []

    def delivered(err, msg):
        if err is not None:
            failures.append(str(err))

    deadline = time.monotonic() + args.timeout
    for key, value, headers in records.iter_expected(args.expected):
        hdrs = [(k, v.encode()) for k, v in headers]
        while True:
            try:
                p.produce(args.topic, key=key.encode(), value=value.encode(), headers=hdrs, on_delivery=delivered)
                break
            except BufferError:
                # The local queue is full: serve delivery reports, retry.
                p.poll(0.1)
                if time.monotonic() > deadline:
                    sys.exit("confluent produce: queue still full at the deadline")
        p.poll(0)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    if left:
        sys.exit("confluent produce: %d records undelivered at the deadline" % left)
    if failures:
        sys.exit("confluent produce: %d deliveries failed, first: %s" % (len(failures), failures[0]))


def consume(args):
    # Partitions are read by assignment, with nothing committed: wren has
    # no group coordinator yet. The binding refuses a consumer without a
    # group.id, so it gets one that is never joined.
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "wren-interop-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    })
    try:
        meta = c.list_topics(args.topic, timeout=10)
        tmeta = meta.topics[args.topic]
        if tmeta.error is not None:
            sys.exit("confluent consume: metadata: %s" % tmeta.error)
        partitions = sorted(tmeta.partitions)
        ends = {}
        for p in partitions:
            low, high = c.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)
            ends[p] = high
        c.assign([TopicPartition(args.topic, p, 0) for p in partitions])
        pos = {p: 0 for p in partitions}
        deadline = time.monotonic() + args.timeout
        with open(args.dump, "w", encoding="utf-8") as out:
            while any(pos[p] < ends[p] for p in partitions):
                if time.monotonic() > deadline:
                    sys.exit("confluent consume: deadline with positions %s, ends %s" % (pos, ends))
                for m in c.consume(num_messages=1000, timeout=1.0):
                    if m.error() is not None:
                        raise KafkaException(m.error())
                    hdrs = [(k, v.decode()) for k, v in (m.headers() or [])]
                    out.write(records.dump_line(m.partition(), m.offset(), m.key().decode(), m.value().decode(), hdrs))
                    pos[m.partition()] = m.offset() + 1
    finally:
        c.close()


def transactions(args):
    # A committed transaction, an aborted one, and a committed one after
    # it, on a topic of its own; a read_committed consumer must read the
    # committed records, each once, and none of the aborted.
    topic = "wren-interop-txn"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=2)])
    for f in fs.values():
        try:
            f.result(args.timeout)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    p = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": "wren-interop-txn"})
    started = time.monotonic()
    p.init_transactions(args.timeout)
    want = []
    for name, commit in (("commit-1", True), ("abort-1", False), ("commit-2", True)):
        p.begin_transaction()
        for i in range(10):
            value = "%s-%d" % (name, i)
            p.produce(topic, key=str(i).encode(), value=value.encode())
            if commit:
                want.append(value)
        if commit:
            p.commit_transaction(args.timeout)
        else:
            p.abort_transaction(args.timeout)
    print("init_transactions, two commits and an abort took %.1f s" % (time.monotonic() - started))

    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "wren-interop-txn-never-joined",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    try:
        c.assign([TopicPartition(topic, p_, 0) for p_ in range(2)])
        got = []
        deadline = time.monotonic() + args.timeout
        while len(got) < len(want) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                sys.exit("confluent transactions: consume: %s" % m.error())
            got.append(m.value().decode())
    finally:
        c.close()
    aborted = [v for v in got if v.startswith("abort")]
    if aborted:
        sys.exit("confluent transactions: read_committed read aborted records %s" % aborted[:5])
    if sorted(got) != sorted(want):
        sys.exit("confluent transactions: read_committed read %d records, want the %d committed: %s" % (len(got), len(want), got))
    print("read_committed read the %d committed records, none of the aborted" % len(got))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
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
    t = sub.add_parser("transactions")
    t.add_argument("bootstrap")
    t.add_argument("--timeout", type=float, default=60)
    t.set_defaults(func=transactions)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
