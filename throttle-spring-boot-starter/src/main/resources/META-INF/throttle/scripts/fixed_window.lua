-- Fixed window, mirroring dev.throttle.memory.FixedWindowLimiter transition for transition.
--
-- KEYS[1]  the key's state: the string "<count>:<windowStart ms>"; absent = no window open
-- ARGV[1]  operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]  cost, at least 1 (Java refuses costs above the limit before calling)
-- ARGV[3]  now in epoch milliseconds, or "" to read the Redis server's TIME
-- P        the policy's numbers, on the line RedisThrottleScripts puts before this text:
--          {limit, window in milliseconds}
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- A window starts at the key's first call after the previous one ended (now >= start + window);
-- a call passes while count + cost <= limit. A refusal writes nothing; every write sets PX to the
-- time until the window ends.

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
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local limit, window = P[1], P[2]

local function fmt(n)
  return string.format('%d', n)
end

-- the current window, or nil when none is open
local count, start
local raw = redis.pcall('GET', key)
local sep = (type(raw) == 'string') and string.find(raw, ':', 1, true)
if sep then
  count = tonumber(string.sub(raw, 1, sep - 1))
  start = tonumber(string.sub(raw, sep + 1))
  if count == nil or start == nil or now - start >= window or start > now then
    count = nil
    start = nil
  end
end

if op == 'a' then
  local c = count or 0
  local s = start or now
  local until_end = s + window - now
  if c + cost > limit then
    return {0, limit, math.max(0, limit - c), until_end, until_end}
  end
  c = c + cost
  redis.call('SET', key, fmt(c) .. ':' .. fmt(s), 'PX', fmt(math.max(1, until_end)))
  return {1, limit, limit - c, 0, until_end}
elseif op == 'p' then
  if count == nil then
    return {1, limit, limit, 0, 0}
  end
  local until_end = start + window - now
  if count < limit then
    return {1, limit, limit - count, 0, until_end}
  end
  return {0, limit, math.max(0, limit - count), until_end, until_end}
elseif op == 'r' then
  if count == nil or count <= cost then
    redis.call('DEL', key)
  else
    redis.call('SET', key, fmt(count - cost) .. ':' .. fmt(start), 'PX', fmt(math.max(1, start + window - now)))
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
