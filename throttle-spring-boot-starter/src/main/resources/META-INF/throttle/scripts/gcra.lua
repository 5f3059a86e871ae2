-- GCRA, mirroring dev.throttle.memory.GcraLimiter transition for transition.
--
-- KEYS[1]  the key's state: the theoretical arrival time (TAT) in epoch microseconds; absent = none
-- ARGV[1]  operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]  cost, at least 1 (Java refuses costs above the limit before calling)
-- ARGV[3]  now in epoch milliseconds, or "" to read the Redis server's TIME in microseconds
-- P        the policy's numbers, on the line RedisThrottleScripts puts before this text:
--          {limit (n), emission interval T/n in microseconds, tolerance n * T/n in microseconds}
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- trial = max(TAT, now) + cost * interval passes when trial - now <= tolerance, and is stored; a
-- refusal writes nothing. Every write sets PX to the time until TAT <= now (neutral) again.
-- Microseconds since the epoch stay below 2^53 (about 285 years), so Lua's doubles hold them exactly.

-- State that this script cannot read (written by another algorithm or by other settings of this
-- policy before a redeploy: another type, another shape, numbers out of range) counts as neutral
-- or is clamped into range, never an error: one stale key must not put the store in failure mode.

-- Where Redis replicates a script by its text (3.2-4 by default, 5-6 with lua-replicate-commands no)
-- it refuses a write after TIME unless the script asks for its effects to be replicated instead;
-- Redis 7 replicates only effects, and the call costs next to nothing there.
if redis.replicate_commands then pcall(redis.replicate_commands) end

local key = KEYS[1]
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now then
  now = now * 1000
else
  local time = redis.call('TIME')
  now = time[1] * 1000000 + time[2]
end
local limit, interval, tolerance = P[1], P[2], P[3]
-- every operand below is an integer under 2^53, where math.floor of a double quotient is exact
local floor = math.floor

local raw = redis.pcall('GET', key)
local tat = (type(raw) == 'string') and tonumber(raw) or nil
local ahead = 0
if tat and tat > now then
  ahead = tat - now
end

-- what a refusal of cost c answers: the retry comes when the trial score is back within tolerance
local function rejected(c)
  local remaining = floor((tolerance - ahead) / interval)
  if remaining < 0 then remaining = 0 end
  return {0, limit, remaining, floor((ahead + c * interval - tolerance + 999) / 1000), floor((ahead + 999) / 1000)}
end

if op == 'a' then
  local trial = ahead + cost * interval
  if trial > tolerance then
    return rejected(cost)
  end
  local reset = floor((trial + 999) / 1000)
  redis.call('SET', key, string.format('%d', now + trial), 'PX', string.format('%d', reset))
  return {1, limit, floor((tolerance - trial) / interval), 0, reset}
elseif op == 'p' then
  if ahead + interval <= tolerance then
    return {1, limit, floor((tolerance - ahead) / interval), 0, floor((ahead + 999) / 1000)}
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
    redis.call('SET', key, string.format('%d', back), 'PX', string.format('%d', floor((back - now + 999) / 1000)))
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
