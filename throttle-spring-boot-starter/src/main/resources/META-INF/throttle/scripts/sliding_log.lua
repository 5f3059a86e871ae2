-- Sliding log with a growing delay (metabase's check), mirroring
-- dev.throttle.memory.SlidingLogLimiter transition for transition.
--
-- KEYS[1]   the key's state: the string "L" followed by the times (epoch ms) of recent allowed
--           attempts, oldest first, each as 15 decimal digits; absent = none
-- ARGV[1]   operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]   cost (always 1 for a sliding log)
-- ARGV[3]   now in epoch milliseconds, or "" to read the Redis server's TIME
-- P         the policy's numbers, on the line RedisThrottleScripts puts before this text: {threshold,
--           ttl in milliseconds, the most entries the log ever needs (SlidingLogPolicy.maxEntries()),
--           then the delay table in milliseconds (SlidingLogPolicy.delaysMillis()): P[3 + over]}
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- An attempt with now - t >= ttl no longer counts. With c live attempts, over = c + 1 - threshold;
-- when over > 0 the call must come delays[over] after the most recent attempt. A refused call is
-- not recorded (nothing is written); an allowed one keeps at most maxEntries - 1 live attempts plus
-- itself. Every write sets PX to the time until no attempt counts any more. A refund removes the
-- most recent attempt.
--
-- Why one fixed-width string rather than a list: the times are written in order, so the live ones
-- are the string's tail; a decision reads one value and finds the first live time by binary search
-- (a few string.sub calls) instead of converting every entry of a list, and a refused call on a
-- hot key, the abuser's case, touches no more than that. The leading "L" keeps the value from
-- reading as a number to the other scripts.

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
  now = time[1] * 1000 + math.floor(time[2] / 1000)
end
local threshold, ttl, max_entries = P[1], P[2], P[3]
local width = 15

-- the log: n entries, entry i at raw[2 + (i - 1) * width, 1 + i * width]; newest = entry n
local raw = redis.pcall('GET', key)
local n = 0
local newest
if type(raw) == 'string' and string.sub(raw, 1, 1) == 'L' and (#raw - 1) % width == 0 then
  n = (#raw - 1) / width
  if n > 0 then
    newest = tonumber(string.sub(raw, #raw - width + 1))
    if newest == nil or newest > now then
      n = 0
    end
  end
end
-- entry i as a number, or nil when it is not one (state from another writer)
local function entry(i)
  return tonumber(string.sub(raw, 2 + (i - 1) * width, 1 + i * width))
end

if op == 'r' then
  if n > 0 then
    if n == 1 then
      redis.call('DEL', key)
    else
      local previous = entry(n - 1)
      local left = previous and (previous + ttl - now) or 0
      if left <= 0 then
        redis.call('DEL', key)
      else
        redis.call('SET', key, string.sub(raw, 1, #raw - width), 'PX', string.format('%d', left))
      end
    end
  end
  return {}
end

-- live attempts: the entries after the last one that is ttl old (times ascend). The oldest is
-- looked at first: in a log that an abuser keeps full every entry is live, and one probe decides;
-- otherwise a binary search over the rest. A log in which the search meets an entry that is not a
-- time counts as empty, lo = n + 1 (only another writer can leave one; checking every entry on every
-- call would cost more than the decision itself). With none live nothing below reads the log, and
-- an allowed call replaces it.
local live = 0
if n > 0 and now - newest < ttl then
  local first = entry(1)
  local lo, hi = 1, n
  if first == nil then
    lo = n + 1
  elseif now - first >= ttl then
    lo = 2
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local t = entry(mid)
      if t == nil then
        lo = n + 1
        break
      end
      if now - t < ttl then hi = mid else lo = mid + 1 end
    end
  end
  live = n - lo + 1
end

-- how long the next attempt must still wait, 0 when it may pass now
local wait = 0
local over = live + 1 - threshold
if over > 0 then
  local delay = P[3 + math.min(over, #P - 3)]
  wait = math.max(0, newest + delay - now)
end

if op == 'p' then
  if live == 0 then
    return {1, threshold, threshold, 0, 0}
  end
  local until_neutral = newest + ttl - now
  if wait > 0 then
    return {0, threshold, 0, wait, until_neutral}
  end
  return {1, threshold, math.max(0, threshold - live), 0, until_neutral}
elseif op == 'a' then
  if wait > 0 then
    return {0, threshold, 0, wait, newest + ttl - now}
  end
  -- keep the newest min(live, maxEntries - 1) attempts (the string's tail), then append now
  local kept = math.min(live, max_entries - 1)
  local tail = (kept > 0) and string.sub(raw, #raw - kept * width + 1) or ''
  redis.call('SET', key, 'L' .. tail .. string.format('%015d', now), 'PX', string.format('%d', ttl))
  return {1, threshold, math.max(0, threshold - (kept + 1)), 0, ttl}
end
return redis.error_reply('unknown operation ' .. tostring(op))
