-- GCRA, mirroring dev.throttle.memory.GcraLimiter transition for transition.
--
-- KEYS[1]  the key's state: the theoretical arrival time (TAT) in epoch microseconds; absent = none
-- ARGV[1]  operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]  cost, at least 1 (Java refuses costs above the limit before calling)
-- ARGV[3]  now in epoch milliseconds, or "" to read the Redis server's TIME in microseconds
-- ARGV[4]  limit (n)
-- ARGV[5]  emission interval T/n in microseconds
-- ARGV[6]  tolerance n * T/n in microseconds
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- trial = max(TAT, now) + cost * interval passes when trial - now <= tolerance, and is stored; a
-- refusal writes nothing. Every write sets PX to the time until TAT <= now (neutral) again.
-- Microseconds since the epoch stay below 2^53 (about 285 years), so Lua's doubles hold them exactly.

-- State that this script cannot read (written by another algorithm or by other settings of this
-- policy before a redeploy: another type, another shape, numbers out of range) counts as neutral
-- or is clamped into range, never an error: one stale key must not put the store in failure mode.

if redis.replicate_commands then pcall(redis.replicate_commands) end

local key = KEYS[1]
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now then
  now = now * 1000
else
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local limit = tonumber(ARGV[4])
local interval = tonumber(ARGV[5])
local tolerance = tonumber(ARGV[6])

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local function ceil_div(a, b)
  return idiv(a + b - 1, b)
end

local function fmt(n)
  return string.format('%d', n)
end

local function remaining(ahead)
  return math.max(0, idiv(tolerance - ahead, interval))
end

local raw = redis.pcall('GET', key)
local tat = (type(raw) == 'string') and tonumber(raw) or nil
local ahead = 0
if tat and tat > now then
  ahead = tat - now
end

local function rejected(c)
  local retry = ahead + c * interval - tolerance
  return {0, limit, remaining(ahead), ceil_div(retry, 1000), ceil_div(ahead, 1000)}
end

if op == 'a' then
  local trial = ahead + cost * interval
  if trial > tolerance then
    return rejected(cost)
  end
  redis.call('SET', key, fmt(now + trial), 'PX', fmt(ceil_div(trial, 1000)))
  return {1, limit, remaining(trial), 0, ceil_div(trial, 1000)}
elseif op == 'p' then
  if ahead + interval <= tolerance then
    return {1, limit, remaining(ahead), 0, ceil_div(ahead, 1000)}
  end
  return rejected(1)
elseif op == 'r' then
  if tat == nil then
    return {}
  end
  local back = tat - cost * interval
  if back <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, fmt(back), 'PX', fmt(ceil_div(back - now, 1000)))
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
