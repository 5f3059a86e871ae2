-- Token bucket, mirroring dev.throttle.memory.TokenBucketLimiter transition for transition.
--
-- KEYS[1]  the key's state: the string "<tokens>:<refilledAt ms>"; absent = a full bucket
-- ARGV[1]  operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]  cost, at least 1 (Java refuses costs above the capacity before calling)
-- ARGV[3]  now in epoch milliseconds, or "" to read the Redis server's TIME (tests pass a fixed now)
-- P        the policy's numbers, on the line RedisThrottleScripts puts before this text:
--          {capacity, refill tokens per period, refill period in milliseconds}
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- Refill adds whole tokens per elapsed whole period and moves refilledAt by exactly those periods,
-- so partial progress is kept; a full bucket restarts its clock at now. A refusal writes nothing;
-- every write sets PX to the time until the bucket is full (neutral) again.

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
local capacity, refill_tokens, period = P[1], P[2], P[3]

-- floor division; exact for the integers here (all below 2^53, where a double quotient never
-- rounds across an integer)
local floor = math.floor
local function idiv(a, b)
  return floor(a / b)
end

local function ceil_div(a, b)
  return idiv(a + b - 1, b)
end

local function fmt(n)
  return string.format('%d', n)
end

local tokens, at
local raw = redis.pcall('GET', key)
local sep = (type(raw) == 'string') and string.find(raw, ':', 1, true)
if sep then
  tokens = tonumber(string.sub(raw, 1, sep - 1))
  at = tonumber(string.sub(raw, sep + 1))
  if tokens == nil or at == nil or tokens < 0 or at > now then
    tokens = nil
    at = nil
  end
end

-- the state after refilling to now: (tokens, refilledAt)
local function refill()
  if tokens == nil or tokens >= capacity then
    return capacity, now
  end
  local elapsed = now - at
  if elapsed < period then
    return tokens, at
  end
  local periods = idiv(elapsed, period)
  if periods >= ceil_div(capacity - tokens, refill_tokens) then
    return capacity, now
  end
  return tokens + periods * refill_tokens, at + periods * period
end

local function until_full(t, a)
  if t >= capacity then
    return 0
  end
  return math.max(0, a + ceil_div(capacity - t, refill_tokens) * period - now)
end

local function rejected(t, a, c)
  local retry = a + ceil_div(c - t, refill_tokens) * period - now
  return {0, capacity, t, retry, until_full(t, a)}
end

local t, a = refill()

if op == 'a' then
  if t < cost then
    return rejected(t, a, cost)
  end
  t = t - cost
  redis.call('SET', key, fmt(t) .. ':' .. fmt(a), 'PX', fmt(math.max(1, until_full(t, a))))
  return {1, capacity, t, 0, until_full(t, a)}
elseif op == 'p' then
  if t >= 1 then
    return {1, capacity, t, 0, until_full(t, a)}
  end
  return rejected(t, a, 1)
elseif op == 'r' then
  if tokens == nil then
    return {}
  end
  t = math.min(capacity, t + cost)
  local ttl = until_full(t, a)
  if t >= capacity or ttl <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, fmt(t) .. ':' .. fmt(a), 'PX', fmt(ttl))
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
