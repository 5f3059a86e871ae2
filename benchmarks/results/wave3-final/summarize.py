#!/usr/bin/env python3
"""Summarizes the interleaved before/after runs of benchmarks/results/wave3-final/ (run from the repo root); the Redis part of wave3-plans/summarize.py, unchanged."""
import csv, glob, os, re, statistics as st
D = 'benchmarks/results/wave3-final'
IMPLS = ['throttle-token-bucket', 'throttle-gcra', 'throttle-fixed-window', 'bucket4j']

def load(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        b = r['Benchmark'].replace('dev.throttle.bench.MemoryBenchmark.', '')
        rows[(b, r['Param: impl'], r['Param: keys'])] = float(r['Score'])
    return rows

def memory():
    pairs = sorted({int(re.search(r'-(\d+)\.csv', p).group(1)) for p in glob.glob(f'{D}/memory-before-*.csv')})
    runs = {(s, n): load(f'{D}/memory-{s}-{n}.csv') for s in ('before', 'after') for n in pairs
            if os.path.exists(f'{D}/memory-{s}-{n}.csv')}
    pairs = [n for n in pairs if ('after', n) in runs]
    print(f'memory: {len(pairs)} pairs')
    print('| keys | implementation | after/before, each pair | median | before vs B4j, each | after vs B4j, each | median vs B4j before / after | B/op before / after |')
    print('|---|---|---|--:|---|---|--:|--:|')
    for keys in ('hot', 'zipf'):
        for impl in IMPLS:
            ratio = [runs['after', n]['decide', impl, keys] / runs['before', n]['decide', impl, keys] for n in pairs]
            vb = {s: [runs[s, n]['decide', impl, keys] / runs[s, n]['decide', 'bucket4j', keys] for n in pairs] for s in ('before', 'after')}
            bop = {s: [runs[s, n]['decide:gc.alloc.rate.norm', impl, keys] for n in pairs] for s in ('before', 'after')}
            f = lambda xs: ', '.join(f'{x:.2f}' for x in xs)
            print(f'| {keys} | {impl} | {f(ratio)} | {st.median(ratio):.2f} | {f(vb["before"])} | {f(vb["after"])} | '
                  f'{st.median(vb["before"]):.2f} / {st.median(vb["after"]):.2f} | '
                  f'{st.median(bop["before"]):.0f} / {st.median(bop["after"]):.0f} |')
    print('absolute decisions/s (median of runs):')
    for keys in ('hot', 'zipf'):
        for impl in IMPLS:
            print(keys, impl, {s: f"{st.median([runs[s, n]['decide', impl, keys] for n in pairs]) / 1e6:.2f}M" for s in ('before', 'after')})

def redis():
    path = f'{D}/redis-summaries.txt'
    if not os.path.exists(path):
        return
    rows = {}
    for line in open(path):
        kv = dict(re.findall(r'(\w+)=(\S+)', line))
        rows.setdefault((kv['callers'], kv['variant'], kv['side']), []).append(kv)
    print('\nredis:')
    print('| callers | variant | before: ratio medians per run | median | after: each | median | after/before | CPU ratio before / after (median of runs) | CPU us/decision before / after | baseline us before / after |')
    print('|--:|---|---|--:|---|--:|--:|--:|--:|--:|')
    for callers in ('16', '64'):
        for variant in ('throttle-gcra', 'throttle-token-bucket'):
            b = rows.get((callers, variant, 'before'), []); a = rows.get((callers, variant, 'after'), [])
            if not b or not a:
                continue
            g = lambda rs, k: [float(r[k]) for r in rs]
            f = lambda xs: ', '.join(f'{x:.2f}' for x in xs)
            rb, ra = g(b, 'ratio_median'), g(a, 'ratio_median')
            cb, ca = g(b, 'cpu_ratio_baseline_over_variant'), g(a, 'cpu_ratio_baseline_over_variant')
            print(f'| {callers} | {variant} | {f(rb)} | {st.median(rb):.2f} | {f(ra)} | {st.median(ra):.2f} | '
                  f'{st.median(ra) / st.median(rb):.2f} | {st.median(cb):.3f} / {st.median(ca):.3f} ({f(cb)} / {f(ca)}) | '
                  f'{st.median(g(b, "cpu_us_per_decision_median")):.1f} / {st.median(g(a, "cpu_us_per_decision_median")):.1f} | '
                  f'{st.median(g(b, "baseline_cpu_us_per_decision_median")):.1f} / {st.median(g(a, "baseline_cpu_us_per_decision_median")):.1f} |')
    # every round's ratio, pooled
    for callers in ('16', '64'):
        for variant in ('throttle-gcra', 'throttle-token-bucket'):
            pooled = {s: sorted(float(x) for r in rows.get((callers, variant, s), []) for x in r['ratios'].split(',')) for s in ('before', 'after')}
            if pooled['before'] and pooled['after']:
                print(callers, variant, 'pooled rounds: before median %.2f [%.2f-%.2f] n=%d, after median %.2f [%.2f-%.2f] n=%d' % (
                    st.median(pooled['before']), pooled['before'][0], pooled['before'][-1], len(pooled['before']),
                    st.median(pooled['after']), pooled['after'][0], pooled['after'][-1], len(pooled['after'])))

redis()
