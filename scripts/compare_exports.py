#!/usr/bin/env python3
"""How far two measurement exports of one kernel agree, schedule by schedule.

Usage: scripts/compare_exports.py A.jsonl.gz B.jsonl.gz [C.jsonl.gz ...]

For each export: its own noise (a schedule's median over its fastest run) and the best
schedule's gain over FixedCSR. For each pair, over the (pattern, schedule) pairs both measured:
the spread of the time ratio around the pattern's median ratio (which removes a whole pattern
running faster or slower that day), overall and for the schedules within 1.25x of the pattern's
fastest in the first export (those a ranking has to order). Two collections with the same
protocol show its repeatability; against an export of another protocol, both protocols' noise.
"""
import gzip
import json
import math
import statistics
import sys


def load(path):
    """{fingerprint: {schedule json: (median_ms, min_ms, source)}} of the verified times."""
    patterns, schedules, times = {}, {}, {}
    with gzip.open(path, "rt") as lines:
        for line in lines:
            d = json.loads(line)
            if "fingerprint" in d:
                patterns[d["id"]] = d["fingerprint"]
            elif d.get("t") == "schedule":
                schedules[d["id"]] = d["json"]
            elif d.get("t") == "m" and d.get("verified"):
                per = times.setdefault(patterns[d["matrix"]], {})
                per[schedules[d["schedule"]]] = (d["median_ms"], d["min_ms"], d["source"])
    return times


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def gain_over_fixed_csr(per_schedule):
    fixed = [t[0] for t in per_schedule.values() if t[2] == "fixed_csr"]
    return fixed[0] / min(t[0] for t in per_schedule.values()) if fixed else None


def describe(name, times):
    ratios = [t[0] / t[1] for per in times.values() for t in per.values() if t[1] > 0]
    gains = [g for g in map(gain_over_fixed_csr, times.values()) if g]
    print(f"{name}: {len(times)} patterns, {len(ratios)} times")
    print("  median / min of a schedule's runs: p50 %.3f, p90 %.3f, p99 %.3f"
          % (quantile(ratios, .5), quantile(ratios, .9), quantile(ratios, .99)))
    print("  best over FixedCSR: p50 %.2f, p90 %.2f" % (quantile(gains, .5), quantile(gains, .9)))


def spread(a, b, keep):
    """Quantiles of |ratio / the pattern's median ratio - 1| over the pairs `keep` admits."""
    deviations, patterns = [], 0
    for fingerprint in set(a) & set(b):
        logs = [math.log(a[fingerprint][s][0] / b[fingerprint][s][0])
                for s in a[fingerprint] if s in b[fingerprint] and keep(fingerprint, s)]
        if len(logs) < 3:
            continue
        patterns += 1
        middle = statistics.median(logs)
        deviations += [math.exp(abs(x - middle)) - 1 for x in logs]
    if not deviations:
        return "no pairs"
    return "%d patterns, %d pairs: p50 %.1f%%, p90 %.1f%%" % (
        patterns, len(deviations), 100 * quantile(deviations, .5), 100 * quantile(deviations, .9))


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    exports = [(path, load(path)) for path in paths]
    for path, times in exports:
        describe(path, times)
    for i, (path_a, a) in enumerate(exports):
        fastest = {f: min(t[0] for t in per.values()) for f, per in a.items()}
        for path_b, b in exports[i + 1:]:
            print(f"{path_a} against {path_b}, spread of a schedule's time ratio:")
            print("  all schedules:   " + spread(a, b, lambda f, s: True))
            print("  within 1.25x of the fastest: " +
                  spread(a, b, lambda f, s: a[f][s][0] <= 1.25 * fastest[f]))


if __name__ == "__main__":
    main(sys.argv[1:])
