# Differential fuzz: every script of main (c68a4bf) against the worktree's, on one redis-server,
# same random operations, costs, clocks (explicit now, moving back and forth), receipts and odd states;
# compares each reply, the stored value and its PTTL. Also the several-limits driver of branch `limits`.
import random, socket, subprocess, sys
PORT = int(sys.argv[1]); N = int(sys.argv[2])
S = 'throttle-spring-boot-starter/src/main/resources/META-INF/throttle/scripts/'
def git(rev, f): return subprocess.run(['git', '-C', '/work/wt-lua', 'show', f'{rev}:{S}{f}'], capture_output=True, text=True, check=True).stdout
def wt(f): return open('/work/wt-lua/' + S + f).read()
class R:
    def __init__(s): s.s = socket.create_connection(('127.0.0.1', PORT)); s.f = s.s.makefile('rb')
    def cmd(s, *a):
        out = b'*%d\r\n' % len(a)
        for x in a:
            x = x if isinstance(x, bytes) else str(x).encode()
            out += b'$%d\r\n%s\r\n' % (len(x), x)
        s.s.sendall(out); return s.read()
    def read(s):
        l = s.f.readline()[:-2]; t, r = l[:1], l[1:]
        if t == b'+': return r.decode()
        if t == b'-': return ('ERR', r.decode())
        if t == b':': return int(r)
        if t == b'$':
            n = int(r)
            if n < 0: return None
            d = s.f.read(n + 2)[:-2]; return d.decode()
        if t == b'*':
            n = int(r); return None if n < 0 else [s.read() for _ in range(n)]
        raise Exception(l)
r = R()
PS = {'gcra': [[100, 10000, 1000000], [5, 200000, 1000000], [1000000, 1, 1000000], [3, 7, 21]],
      'token_bucket': [[100, 1, 10], [5, 2, 1000], [1000000, 1000, 1], [10, 3, 7]],
      'fixed_window': [[100, 1000], [3, 50], [1000000, 1000]],
      'lockout': [[1000, 10, 20, 40], [500, 100]],
      'sliding_log': [[3, 1000, 10, 10, 15, 22], [2, 100, 4, 5]]}
def single(prelude, body, p): return 'local P = {%s}\n' % ', '.join(map(str, p)) + prelude + body
def several(prelude, body, driver, limits):
    return 'local P = {}\nlocal LIMITS = {%s}\n' % ', '.join('{%s}' % ', '.join(map(str, l)) for l in limits) + prelude + \
        'local function decideLimit(redis)\n' + body + '\nend\n' + driver
driver = git('limits', 'several.lua')
ODD = ['abc', '5', '1e3:5', '-1:100', 'inf:1', 'nan:nan', 'x:y:z', ':', '3:', ':5', '1e300:1', '7:-inf', '2.5:100', 'L', 'L123', '']
mismatch = 0; cases = 0
random.seed(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
def shas(alg, p, sev=None):
    out = []
    for prelude, body, drv in ((git('c68a4bf', 'prelude.lua'), git('c68a4bf', alg + '.lua'), driver), (wt('prelude.lua'), wt(alg + '.lua'), driver)):
        text = several(prelude, body, drv, sev) if sev else single(prelude, body, p)
        # one script per step: the script under test as a function, then the key's value and PTTL read
        # and its TTL removed in the same script (time stands still in a script: nothing expires
        # between the write and the read, and explicit clocks, not real time, decide what is kept)
        text = ('local function step(redis)\n' + text + '\nend\n'
                "local writes = {}\n"
                "local proxy = setmetatable({call = function(...)\n"
                "  local a = {...}\n"
                "  if a[1] == 'SET' or a[1] == 'DEL' then\n"
                "    local w = {}\n"
                "    for i = 1, #a do w[i] = (a[i] == KEYS[1]) and 'K' or (type(a[i]) == 'number') and string.format('%.17g', a[i]) or tostring(a[i]) end\n"
                "    writes[#writes + 1] = table.concat(w, ' ')\n"
                "  end\n"
                "  return redis.call(...)\n"
                "end}, {__index = redis})\n"
                "local reply = step(proxy)\n"
                "local t = redis.call('TYPE', KEYS[1]).ok\n"
                "local v = (t == 'string') and redis.call('GET', KEYS[1]) or t\n"
                "redis.call('PERSIST', KEYS[1])\nreturn {reply, v, table.concat(writes, ' ; ')}")
        out.append(r.cmd('SCRIPT', 'LOAD', text))
    return out
plans = []
for alg, ps in PS.items():
    for p in ps: plans.append((alg, p, None))
    if alg in ('gcra', 'token_bucket', 'fixed_window', 'lockout'):
        plans.append((alg, None, ps[:2]))
for alg, p, sev in plans:
    old, new = shas(alg, p, sev)
    for seq in range(N):
        r.cmd('DEL', 'ko', 'kn')
        now = 1795416000000 + random.randint(0, 10**6)
        receipts = []
        for step in range(random.randint(1, 40)):
            x = random.random()
            if x < 0.05:
                v = random.choice(ODD + [str(now) , '%d:%d' % (random.randint(0, 200), now + random.randint(-5000, 5000)),
                     '%d:%d' % (now * 1000 + random.randint(-10**7, 10**7), random.choice([1, 7, 10000, 200000, 5]))])
                if sev and random.random() < 0.5: v = v + '|' + random.choice(ODD)
                r.cmd('SET', 'ko', v); r.cmd('SET', 'kn', v)
            elif x < 0.07:
                r.cmd('DEL', 'ko', 'kn'); r.cmd('HSET', 'ko', 'a', '1'); r.cmd('HSET', 'kn', 'a', '1')
            now += random.choice([0, 0, 1, 3, 10, 50, 999, 1000, 7000, -5, -2000, random.randint(-10**5, 10**6)])
            op = random.choice('aaaapr')
            cost = random.choice([1, 1, 1, 2, 3])
            args = [op, cost, now]
            if op == 'r' and random.random() < 0.7:
                rc = random.choice(receipts + ['0', '-3', 'abc', '1e300', str(now), str(now * 1000)]) if receipts else str(now)
                if sev: rc = ','.join([str(rc)] * random.choice([1, 2, 3]))
                args.append(rc)
            a, go, po = r.cmd('EVALSHA', old, 1, 'ko', *args)
            b, gn, pn = r.cmd('EVALSHA', new, 1, 'kn', *args)
            cases += 1
            if a != b or go != gn or po != pn:
                mismatch += 1
                if mismatch <= 10: print('MISMATCH', alg, p, sev, args, a, b, go, gn, po, pn)
            if op == 'a' and isinstance(a, list) and len(a) >= 6 and a[0] == 1:
                receipts.append(str(a[5]) if not sev else ','.join(str(a[i]) for i in range(5, len(a), 6)))
print('steps', cases, 'mismatches (reply, stored value, or the SET/DEL commands and their PX)', mismatch)
