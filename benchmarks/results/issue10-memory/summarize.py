#!/usr/bin/env python3
"""Summarizes the interleaved before/after runs of benchmarks/results/issue10-memory/ (run from the repo root).
PREFIX and IMPLS pick a run as memory-ab.sh names it: memory-*.csv and all six implementations by default,
PREFIX=array IMPLS=throttle-lockout,throttle-sliding-log,bucket4j for the second (array limiter) run."""
import csv, glob, os, re, statistics as st
D = 'benchmarks/results/issue10-memory'
P = os.environ.get('PREFIX', 'memory')
IMPLS = os.environ.get('IMPLS', 'throttle-token-bucket,throttle-gcra,throttle-fixed-window,throttle-lockout,'
                       'throttle-sliding-log,bucket4j').split(',')

def load(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        b = r['Benchmark'].replace('dev.throttle.bench.MemoryBenchmark.', '')
        rows[(b, r['Param: impl'], r['Param: keys'])] = float(r['Score'])
    return rows

def memory():
    pairs = sorted({int(re.search(r'-(\d+)\.csv', p).group(1)) for p in glob.glob(f'{D}/{P}-before-*.csv')})
    runs = {(s, n): load(f'{D}/{P}-{s}-{n}.csv') for s in ('before', 'after') for n in pairs
            if os.path.exists(f'{D}/{P}-{s}-{n}.csv')}
    pairs = [n for n in pairs if ('after', n) in runs]
    print(f'{P}: {len(pairs)} pairs')
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

memory()
