#!/usr/bin/env python3
"""Replays a tune's second round on the neighbours a collection measured.

For every matrix of a measurement export (datasets/measurements/<kernel>.jsonl.gz), the
neighbours `collect --neighbours` measured around the three fastest of its first round are
drawn k at a time, uniformly or weighted by how often their kind of move won on the other half
of the matrices (two folds), and the best drawn is compared with the first round's best. The
kind of move is read off the fields that differ between a neighbour and its nearest anchor
(the splits, the loop order and formats, the partition, the threads...), which approximates
WacoTemplate::Neighbours' names; the anchor kind (a rule or a drawn schedule) and the
shrinkage follow RefinementMoveWeights.

Usage: scripts/move_replay.py KERNEL [--draws 4,8] [--repeats 200]
"""
import argparse, collections, gzip, json, math, os, random

PRIOR = 10  # pseudo-tries, as kMovePriorTries
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(kernel):
    schedules, times = {}, collections.defaultdict(list)
    with gzip.open(os.path.join(ROOT, 'datasets/measurements', kernel + '.jsonl.gz'), 'rt') as f:
        for line in f:
            d = json.loads(line)
            if d.get('t') == 'schedule':
                schedules[d['id']] = json.loads(d['json'])
            elif d.get('t') == 'm' and d['verified']:
                times[d['matrix']].append((d['median_ms'], d['schedule'], d['source']))
    return schedules, times


def distance(a, b):
    sa, sb = a.get('splits', {}), b.get('splits', {})
    n = sum(sa.get(k, 1) != sb.get(k, 1) for k in set(sa) | set(sb))
    pa, pb = a.get('parallel', {}), b.get('parallel', {})
    n += sum(pa.get(k) != pb.get(k) for k in set(pa) | set(pb))
    n += sum(a.get(k) != b.get(k) for k in set(a) | set(b) if k not in ('splits', 'parallel', 'format'))
    return n or int(a.get('format') != b.get('format'))


def move(a, b):
    sa, sb = a.get('splits', {}), b.get('splits', {})
    changed = [k for k in sorted(set(sa) | set(sb)) if sa.get(k, 1) != sb.get(k, 1)]
    if len(changed) == 2 and sa.get(changed[0], 1) * sa.get(changed[1], 1) == sb.get(changed[0], 1) * sb.get(changed[1], 1):
        return 'reshape'
    if changed:
        k = changed[0]
        return 'split %s %s' % (k, 'up' if sb.get(k, 1) > sa.get(k, 1) else 'down')
    pa, pb = a.get('parallel', {}), b.get('parallel', {})
    if (pa.get('threads') == 1) != (pb.get('threads') == 1):
        return 'threads'
    if pa.get('partition') != pb.get('partition'):
        return 'partition'
    if pa.get('chunk') != pb.get('chunk'):
        return 'chunk'
    for key in ('unroll', 'transposed'):
        if a.get(key) != b.get(key):
            return key
    if a.get('tree') != b.get('tree'):
        return 'order'
    return 'format'


def contests(schedules, times):
    out = []
    for lst in times.values():
        first = sorted(x for x in lst if x[2] != 'refined')
        if not first:
            continue
        best, anchors, drawn = first[0][0], first[:3], []
        for t, s, src in lst:
            if src != 'refined':
                continue
            _, rank, a = min((distance(schedules[a[1]], schedules[s]), r, a) for r, a in enumerate(anchors))
            kind = 'searched' if a[2] in ('sampled', 'model', 'refined') else 'rule'
            drawn.append((kind, move(schedules[a[1]], schedules[s]), t))
        if drawn:
            out.append((best, drawn))
    return out


def learn(train):
    tally = collections.defaultdict(lambda: [0, 0])
    for best, drawn in train:
        for kind, m, t in drawn:
            win = t < 0.99 * best
            for key in ((kind, m), (kind, None)):
                tally[key][0] += win
                tally[key][1] += 1
    rate = {k: (w + PRIOR * 0.5) / (n + PRIOR) for (k, m), (w, n) in tally.items() if m is None}
    weights = {key: (w + PRIOR * rate[key[0]]) / (n + PRIOR) for key, (w, n) in tally.items() if key[1]}
    return lambda kind, m: weights.get((kind, m), rate.get(kind, 0.5))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('kernel')
    p.add_argument('--draws', default='4,8')
    p.add_argument('--repeats', type=int, default=200)
    a = p.parse_args()
    data = contests(*load(a.kernel))
    rng = random.Random(1)
    for k in map(int, a.draws.split(',')):
        gains = {'uniform': [], 'weighted': []}
        for fold in (0, 1):
            weight = learn(data[1 - fold::2])
            for best, drawn in data[fold::2]:
                for name in gains:
                    total = 0.0
                    for _ in range(a.repeats):
                        w = [1.0 if name == 'uniform' else weight(kind, m) for kind, m, _ in drawn]
                        keys = sorted(((math.log(1.0 - rng.random()) / x, i) for i, x in enumerate(w)), reverse=True)
                        fastest = min(drawn[i][2] for _, i in keys[:k])
                        total += math.log(best / min(best, fastest))
                    gains[name].append(total / a.repeats)
        everything = [math.log(best / min(best, min(t for _, _, t in drawn))) for best, drawn in data]
        print('%s, %d matrices, %d of their measured neighbours drawn: second round over the first, '
              'geomean: uniform %.4f, weighted %.4f (all measured %.4f)' % (
                  a.kernel, len(data), k, *(math.exp(sum(v) / len(v)) for v in gains.values()),
                  math.exp(sum(everything) / len(everything))))


if __name__ == '__main__':
    main()
