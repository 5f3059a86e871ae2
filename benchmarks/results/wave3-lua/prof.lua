-- prof.lua <script> <n> <stepMicros> [op] : runs the script n times in plain Lua 5.1 with a stubbed redis,
-- the clock advancing stepMicros per call; prints CPU microseconds per call (os.clock) and the allowed share.
local file, n, step, op = arg[1], tonumber(arg[2]), tonumber(arg[3]), arg[4] or 'a'
local src = io.open(file):read('*a')
local chunk = assert(loadstring(src, file))
local store = {}
local nowMicros = 1795416010000000
local redis = {}
function redis.call(cmd, k, v, px, ttl)
  if cmd == 'TIME' then return {tostring(math.floor(nowMicros / 1e6)), tostring(nowMicros % 1e6)} end
  if cmd == 'SET' then store[k] = v; return 'OK' end
  if cmd == 'DEL' then store[k] = nil; return 1 end
  if cmd == 'GET' then return store[k] or false end
  error(cmd)
end
function redis.pcall(cmd, k) if cmd == 'GET' then return store[k] or false end return redis.call(cmd, k) end
function redis.error_reply(s) return {err = s} end
redis.replicate_commands = function() return true end
redis.REDIS_VERSION_NUM = 458767
local env = setmetatable({KEYS = {'throttle:{bench:hot}'}, ARGV = {op, '1', ''}, redis = redis}, {__index = _G})
setfenv(chunk, env)
local allowed = 0
for i = 1, 2000 do chunk() end
store = {}
local t0 = os.clock()
for i = 1, n do
  nowMicros = nowMicros + step
  local r = chunk()
  if r[1] == 1 then allowed = allowed + 1 end
end
local t1 = os.clock()
print(string.format('%-32s %7.3f us/call  allowed %5.1f%%', file, (t1 - t0) * 1e6 / n, allowed * 100 / n))
