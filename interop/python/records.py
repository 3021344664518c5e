"""The records every interop check produces, and the checker of what came back.

Every client produces the same kind of data: records generated here,
written to a TSV file (key, value, headers), which each producer reads,
so the test data has one source. Every consumer writes what it read in
one dump format, partition, offset, key, value and headers separated by
tabs, in the order it read them; the headers column is kcat's %h format
(name=value,name=value), so kcat's own output needs no conversion. Keys,
values and header parts never contain a tab, a newline, ',', '=' or ':'
(kcat -K: splits key and value at the first ':').

Only the standard library: it runs under any Python 3.

Usage:
  records.py gen TAG N [--static-header NAME=VALUE ...]   expected records, TSV, on stdout
  records.py check EXPECTED DUMP [--at-least-once]       compare; exit 1 with the differences
  records.py selftest EXPECTED DUMP                       check that compare rejects damaged
                                                          copies of a good DUMP
"""

import argparse
import sys

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
KEYS = 50


def record(tag, i):
    """Record i of run TAG: (key, value, headers). Values are unique (they
    carry i), of varied length (16 to 215 bytes) and compress moderately, so
    batches hold many records of different sizes; a key always maps to the
    same partition, so order per key is order per partition."""
    n = 16 + (i * 37) % 200
    # A third pseudo-random (a linear congruential generator seeded by i),
    # repeated: compressible, but not trivially.
    x, chars = i + 1, []
    for _ in range((n + 2) // 3):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        chars.append(ALPHABET[(x >> 16) % len(ALPHABET)])
    payload = ("".join(chars) * 3)[:n]
    key = "key-%02d" % (i % KEYS)
    value = "%s.%05d.%s" % (tag, i, payload)
    headers = [("tag", tag), ("i", str(i))]
    return key, value, headers


def format_headers(headers):
    return ",".join("%s=%s" % (k, v) for k, v in headers)


def parse_headers(text):
    if text == "":
        return []
    out = []
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError("header %r has no '='" % part)
        out.append((name, value))
    return out


def iter_expected(path):
    """The records of an expected file as (key, value, headers) tuples, in
    produce order, each as soon as its line is read: a producer reading a
    pipe sends what came so far."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, value, headers = line.rstrip("\n").split("\t")
            yield key, value, parse_headers(headers)


def read_expected(path):
    """The records of an expected file, as a list (see iter_expected)."""
    return list(iter_expected(path))


def dump_line(partition, offset, key, value, headers):
    """One line of the dump format, headers as (name, value) str pairs."""
    return "%d\t%d\t%s\t%s\t%s\n" % (partition, offset, key, value, format_headers(headers))


def gen(args):
    static = []
    for h in args.static_header:
        name, sep, value = h.partition("=")
        if not sep:
            sys.exit("records.py: --static-header %r: want NAME=VALUE" % h)
        static.append((name, value))
    out = sys.stdout
    for i in range(args.n):
        key, value, headers = record(args.tag, i)
        if args.static_header:
            headers = static
        out.write("%s\t%s\t%s\n" % (key, value, format_headers(headers)))


def compare(expected, lines, at_least_once=False):
    """Compare dump lines with the expected records: the same records (key,
    value, headers) each exactly once, offsets 0, 1, 2, ... in every
    partition in the order read (a fresh topic, one producer: no gaps), the
    produce order kept within each partition, every key in one partition.
    at_least_once, for a producer without idempotence whose requests were
    retried across a failover: a record may be there more than once and
    out of produce order, everything else still holds. Returns the problems
    found, the record count of each partition and the duplicates."""
    by_value = {r[1]: (i, r) for i, r in enumerate(expected)}
    problems = []
    seen = set()
    next_offset = {}
    last_index = {}
    key_partition = {}
    count = 0
    duplicates = 0
    for lineno, line in enumerate(lines, 1):
        count += 1
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 5 or not fields[0].isdigit() or not fields[1].isdigit():
            problems.append("dump line %d: want partition, offset, key, value, headers: %r" % (lineno, line[:200]))
            continue
        p, o, key, value, headers = fields
        p, o = int(p), int(o)
        want_offset = next_offset.get(p, 0)
        if o != want_offset:
            problems.append("partition %d: offset %d read where %d was next" % (p, o, want_offset))
        next_offset[p] = o + 1
        hit = by_value.get(value)
        if hit is None:
            problems.append("partition %d offset %d: value never produced: %r" % (p, o, value[:80]))
            continue
        i, (want_key, _, want_headers) = hit
        if i in seen:
            duplicates += 1
            if not at_least_once:
                problems.append("partition %d offset %d: record %d read twice" % (p, o, i))
        seen.add(i)
        if key != want_key:
            problems.append("partition %d offset %d: record %d key %r, want %r" % (p, o, i, key, want_key))
        try:
            got_headers = parse_headers(headers)
        except ValueError as e:
            got_headers = [("?", str(e))]
        if got_headers != want_headers:
            problems.append("partition %d offset %d: record %d headers %r, want %r" % (p, o, i, got_headers, want_headers))
        if not at_least_once and last_index.get(p, -1) >= i:
            problems.append("partition %d offset %d: record %d read after record %d (produce order lost)" % (p, o, i, last_index[p]))
        last_index[p] = i
        kp = key_partition.setdefault(key, p)
        if kp != p:
            problems.append("key %r in partitions %d and %d" % (key, kp, p))
    missing = len(expected) - len(seen)
    if missing:
        first = sorted(set(range(len(expected))) - seen)[:10]
        problems.append("%d of %d records missing (first: %s)" % (missing, len(expected), first))
    if count != len(expected) + duplicates:
        problems.append("%d records read, %d produced" % (count, len(expected)))
    return problems, next_offset, duplicates


def check(args):
    expected = read_expected(args.expected)
    with open(args.dump, encoding="utf-8") as f:
        problems, ends, duplicates = compare(expected, f.readlines(), args.at_least_once)
    if problems:
        for p in problems[:20]:
            print("  " + p, file=sys.stderr)
        if len(problems) > 20:
            print("  ... and %d more" % (len(problems) - 20), file=sys.stderr)
        sys.exit(1)
    spread = " ".join("p%d=%d" % (p, ends[p]) for p in sorted(ends))
    dups = ", %d duplicates" % duplicates if args.at_least_once else ""
    print("%d records%s, %s" % (sum(ends.values()), dups, spread))


def selftest(args):
    """Show that compare can fail: it must accept DUMP (a good dump of
    EXPECTED) and reject each kind of damage a broker could do to it."""
    expected = read_expected(args.expected)
    with open(args.dump, encoding="utf-8") as f:
        good = f.readlines()
    problems = compare(expected, good)[0]
    if problems:
        sys.exit("records.py selftest: the good dump is rejected: %s" % problems[0])
    first_p = good[0].split("\t")[0]
    same_p = [j for j, line in enumerate(good) if line.split("\t")[0] == first_p]
    a, b = same_p[0], same_p[1]

    def fields(j):
        return good[j].rstrip("\n").split("\t")

    def replace(j, k, v):
        f = fields(j)
        f[k] = v
        out = list(good)
        out[j] = "\t".join(f) + "\n"
        return out

    swapped = list(good)
    swapped[a], swapped[b] = swapped[b], swapped[a]
    mutations = {
        "a record lost": good[:a] + good[a + 1:],
        "a record read twice": good + [good[a]],
        "two records swapped": swapped,
        "an offset skipped": replace(a, 1, str(int(fields(a)[1]) + 1)),
        "a key changed": replace(a, 2, fields(a)[2] + "x"),
        "a value changed": replace(a, 3, fields(a)[3] + "x"),
        "a header changed": replace(a, 4, fields(a)[4] + "x"),
        "a header lost": replace(a, 4, ",".join(fields(a)[4].split(",")[1:])),
        "a record in another partition": replace(a, 0, str(int(first_p) + 1)),
    }
    passed = [name for name, lines in mutations.items() if not compare(expected, lines)[0]]
    # The at-least-once check forgives duplicates and order, nothing else.
    forgiven = ("a record read twice", "two records swapped")
    passed += ["%s (at least once)" % name for name, lines in mutations.items()
               if name not in forgiven and not compare(expected, lines, at_least_once=True)[0]]
    if passed:
        sys.exit("records.py selftest: damage not caught: %s" % ", ".join(passed))
    print("%d kinds of damage caught, %d of them by the at-least-once check too" % (len(mutations), len(mutations) - len(forgiven)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("tag")
    g.add_argument("n", type=int)
    g.add_argument("--static-header", action="append", default=[])
    g.set_defaults(func=gen)
    c = sub.add_parser("check")
    c.add_argument("expected")
    c.add_argument("dump")
    c.add_argument("--at-least-once", action="store_true",
                   help="duplicates and produce order across retries allowed (no idempotence)")
    c.set_defaults(func=check)
    t = sub.add_parser("selftest")
    t.add_argument("expected")
    t.add_argument("dump")
    t.set_defaults(func=selftest)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
