import re, subprocess, sys
def groups(jfr):
    out = subprocess.run(['java','-cp','main:bench-main.jar','dev.throttle.bench.JfrTop',jfr,'5000','caller-'],capture_output=True,text=True).stdout
    n = int(re.search(r'(\d+) samples', out).group(1))
    self = out.split('\nself')[1].split('\ntotal (on the stack)')[0]
    g = {}
    for v, m in re.findall(r'^\s+([\d.]+)%\s+(\S+)', self, flags=re.M):
        k = ('throttle (dev.throttle.spring/core)' if m.startswith('dev.throttle.') and not m.startswith('dev.throttle.bench') else
             'harness (dev.throttle.bench, HdrHistogram)' if m.startswith(('dev.throttle.bench','org.HdrHistogram')) else
             'Reactor' if m.startswith('reactor.') else 'Lettuce' if m.startswith('io.lettuce') else
             'Spring Data Redis' if m.startswith('org.springframework') else 'Netty' if m.startswith('io.netty') else 'JDK' if m.startswith(('java.','jdk.','sun.')) else 'other')
        g[k] = g.get(k, 0) + float(v)
    return n, g
res = {s: groups(f'profile-{s}-throttle-gcra.jfr') for s in sys.argv[1:]}  # run in /tmp/i10 (the jfr files and the main harness are there)
keys = sorted({k for n, g in res.values() for k in g}, key=lambda k: -max(g.get(k,0) for n,g in res.values()))
print('| self time on the caller threads, by code | ' + ' | '.join(res) + ' |')
print('|---|' + '--:|' * len(res))
for k in keys:
    print(f'| {k} | ' + ' | '.join(f'{g.get(k,0):.1f}%' for n, g in res.values()) + ' |')
print('| samples | ' + ' | '.join(str(n) for n, g in res.values()) + ' |')
