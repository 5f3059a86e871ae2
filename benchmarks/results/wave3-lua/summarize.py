import sys, re, statistics as st, collections
d = collections.defaultdict(list); c = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'(\d+) (\S+) (\S+) (\S+) usec_per_call=([\d.]+) cpu_per_call=([\d.]+)', line)
    if m:
        k = (m[3], m[4], m[2]); d[k].append(float(m[5])); c[k].append(float(m[6]))
for k in sorted(d):
    print('%-14s %-5s %-5s usec_per_call median %6.2f [%5.2f-%5.2f]  cpu median %6.2f  n=%d' % (k + (st.median(d[k]), min(d[k]), max(d[k]), st.median(c[k]), len(d[k]))))
