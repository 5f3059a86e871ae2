-- Escalating lockout, mirroring dev.throttle.memory.LockoutLimiter transition for transition.
--
-- KEYS[1]   the key's state: the string "<rung index>:<lastAllowed ms>"; absent = never used
-- ARGV[1]   operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]   cost (always 1 for a lockout)
-- ARGV[3]   now in epoch milliseconds, or "" to read the Redis server's TIME
-- P         the policy's numbers, on the line RedisThrottleScripts puts before this text:
--           {expire-after in milliseconds, then the ladder of timeouts in milliseconds, rung 0 first}
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- The first attempt passes and stores (0, now); a later one passes when now - lastAllowed >=
-- timeouts[index] and stores (min(index + 1, last rung), now). A refusal writes nothing. State idle
-- for expire-after counts as never used, and every write sets PX to the time until then. A refund
-- steps back one rung: (i, t) becomes (i - 1, t - timeouts[i - 1]).

-- State that this script cannot read (written by another algorithm or by other settings of this
-- policy before a redeploy: another type, another shape, numbers out of range) counts as neutral
-- or is clamped into range, never an error: one stale key must not put the store in failure mode.

-- Where Redis replicates a script by its text (3.2-4 by default, 5-6 with lua-replicate-commands no)
-- it refuses a write after TIME unless the script asks for its effects to be replicated instead;
-- Redis 7 replicates only effects, and the call costs next to nothing there.
if redis.replicate_commands then pcall(redis.replicate_commands) end

local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[3])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local expire = P[1]
local rungs = #P - 1

local function fmt(n)
  return string.format('%d', n)
end

local function timeout(index)
  return P[2 + index]
end

local index, last
local raw = redis.pcall('GET', key)
local sep = (type(raw) == 'string') and string.find(raw, ':', 1, true)
if sep then
  index = tonumber(string.sub(raw, 1, sep - 1))
  last = tonumber(string.sub(raw, sep + 1))
  if index == nil or last == nil or index < 0 or now - last >= expire or last > now then
    index = nil
    last = nil
  else
    -- a ladder shortened since this state was written: its top rung is the highest that can apply
    index = math.min(index, rungs - 1)
  end
end

local function rejected()
  return {0, 1, 0, last + timeout(index) - now, last + expire - now}
end

if op == 'a' then
  local next_index = 0
  if index ~= nil then
    if now - last < timeout(index) then
      return rejected()
    end
    next_index = math.min(index + 1, rungs - 1)
  end
  redis.call('SET', key, fmt(next_index) .. ':' .. fmt(now), 'PX', fmt(expire))
  return {1, 1, 0, 0, expire}
elseif op == 'p' then
  if index == nil then
    return {1, 1, 1, 0, 0}
  end
  if now - last >= timeout(index) then
    return {1, 1, 1, 0, last + expire - now}
  end
  return rejected()
elseif op == 'r' then
  if index == nil or index == 0 then
    redis.call('DEL', key)
    return {}
  end
  local previous = index - 1
  local moved = last - timeout(previous)
  local ttl = moved + expire - now
  if ttl <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, fmt(previous) .. ':' .. fmt(moved), 'PX', fmt(ttl))
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
