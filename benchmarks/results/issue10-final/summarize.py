#!/usr/bin/env python3
"""Summarizes the interleaved before/after runs of benchmarks/results/issue10-final/ (run from the repo root).
Usage: summarize.py <tag> <after-side>   e.g. summarize.py main main, summarize.py final final"""
import re, statistics as st, sys
D = 'benchmarks/results/issue10-final'
tag, after = sys.argv[1], sys.argv[2]
rows = {}
for line in open(f'{D}/redis-summaries-{tag}.txt'):
    kv = dict(re.findall(r'(\w+)=(\S+)', line))
    rows.setdefault((kv['callers'], kv['variant'], kv['side']), []).append(kv)
f = lambda xs, n=2: ', '.join(f'{x:.{n}f}' for x in xs)
print(f'redis, before = f00c3ab, after = {after} ({tag}):')
print('| callers | variant | ratio before, each -> median | ratio after, each -> median | after/before | CPU ratio before -> after (each) | CPU us/decision before / after (raw EVALSHA) | load at start of runs |')
print('|--:|---|--:|--:|--:|--:|--:|---|')
for callers in ('16', '64'):
    for variant in ('throttle-gcra', 'throttle-token-bucket'):
        b = rows.get((callers, variant, 'before'), []); a = rows.get((callers, variant, after), [])
        if not b or not a:
            continue
        r = {s: [float(x['ratio_median']) for x in xs] for s, xs in (('b', b), ('a', a))}
        c = {s: [float(x['cpu_ratio_baseline_over_variant']) for x in xs] for s, xs in (('b', b), ('a', a))}
        u = {s: [float(x['cpu_us_per_decision_median']) for x in xs] for s, xs in (('b', b), ('a', a))}
        ub = {s: [float(x['baseline_cpu_us_per_decision_median']) for x in xs] for s, xs in (('b', b), ('a', a))}
        load = ', '.join(x['load'].split('/')[0] for x in b + a)
        print(f"| {callers} | {variant} | {f(r['b'])} -> **{st.median(r['b']):.2f}** | {f(r['a'])} -> **{st.median(r['a']):.2f}** | "
              f"{st.median(r['a']) / st.median(r['b']):.2f} | {st.median(c['b']):.3f} -> {st.median(c['a']):.3f} ({f(c['b'])} / {f(c['a'])}) | "
              f"{st.median(u['b']):.1f} / {st.median(u['a']):.1f} ({st.median(ub['b']):.1f} / {st.median(ub['a']):.1f}) | {load} |")
print('pooled rounds (median [lowest-highest]):')
for callers in ('16', '64'):
    for variant in ('throttle-gcra', 'throttle-token-bucket'):
        out = []
        for side in ('before', after):
            xs = [float(v) for x in rows.get((callers, variant, side), []) for v in x['ratios'].split(',')]
            if xs:
                out.append(f'{side} {st.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}] n={len(xs)}')
        print(f'  {callers} {variant}: ' + ', '.join(out))
