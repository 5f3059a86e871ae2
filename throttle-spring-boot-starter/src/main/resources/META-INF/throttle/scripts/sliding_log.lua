-- Sliding log with a growing delay (metabase's check), mirroring
-- dev.throttle.memory.SlidingLogLimiter transition for transition.
--
-- KEYS[1]   the key's state: a list of the times (epoch ms) of recent allowed attempts, oldest first
-- ARGV[1]   operation: a (acquire) | r (refund) | p (peek)
-- ARGV[2]   cost (always 1 for a sliding log)
-- ARGV[3]   now in epoch milliseconds, or "" to read the Redis server's TIME
-- ARGV[4]   threshold
-- ARGV[5]   ttl in milliseconds
-- ARGV[6]   the most entries the log ever needs (SlidingLogPolicy.maxEntries())
-- ARGV[7..] the delay table in milliseconds (SlidingLogPolicy.delaysMillis()): ARGV[6 + over]
--
-- Returns {allowed, limit, remaining, retryAfterMs, resetAfterMs} for a and p, {} for r.
-- An attempt with now - t >= ttl no longer counts. With c live attempts, over = c + 1 - threshold;
-- when over > 0 the call must come delays[over] after the most recent attempt. A refused call is
-- not recorded (nothing is written); an allowed one keeps at most maxEntries - 1 live attempts plus
-- itself. Every write sets PX to the time until no attempt counts any more. A refund removes the
-- most recent attempt.

-- State that this script cannot read (written by another algorithm or by other settings of this
-- policy before a redeploy: another type, another shape, numbers out of range) counts as neutral
-- or is clamped into range, never an error: one stale key must not put the store in failure mode.

if redis.replicate_commands then pcall(redis.replicate_commands) end

local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[3])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local threshold = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local max_entries = tonumber(ARGV[6])
local delay_count = #ARGV - 6

local function fmt(n)
  return string.format('%d', n)
end

-- sets the expiry to the time until the newest of the list's times is ttl old, or deletes the key
local function expire_from(times)
  local newest = nil
  for i = 1, #times do
    local t = tonumber(times[i])
    if newest == nil or t > newest then newest = t end
  end
  if newest == nil or newest + ttl - now <= 0 then
    redis.call('DEL', key)
  else
    redis.call('PEXPIRE', key, fmt(newest + ttl - now))
  end
end

-- the recent attempts, oldest first; a key of another type or with entries that are not times is
-- dropped so that the write below starts a clean list
local log = redis.pcall('LRANGE', key, 0, -1)
if type(log) ~= 'table' or log.err then
  redis.call('DEL', key)
  log = {}
end
for i = 1, #log do
  log[i] = tonumber(log[i])
  if log[i] == nil or log[i] > now then
    redis.call('DEL', key)
    log = {}
    break
  end
end
local n = #log

if op == 'r' then
  if n > 0 then
    redis.call('RPOP', key)
    log[n] = nil
    expire_from(log)
  end
  return {}
end
local live = 0
for i = 1, n do
  if now - log[i] < ttl then live = live + 1 end
end

-- how long the next attempt must still wait, 0 when it may pass now
local wait = 0
local over = live + 1 - threshold
if over > 0 then
  local delay = tonumber(ARGV[6 + math.min(over, delay_count)])
  wait = math.max(0, log[n] + delay - now)
end

if op == 'p' then
  if live == 0 then
    return {1, threshold, threshold, 0, 0}
  end
  local until_neutral = log[n] + ttl - now
  if wait > 0 then
    return {0, threshold, 0, wait, until_neutral}
  end
  return {1, threshold, math.max(0, threshold - live), 0, until_neutral}
elseif op == 'a' then
  if wait > 0 then
    return {0, threshold, 0, wait, log[n] + ttl - now}
  end
  -- keep the newest min(live, maxEntries - 1) live attempts, then append now
  local kept = math.min(live, max_entries - 1)
  local keep = {}
  local contiguous = true
  local i = n
  while i >= 1 and #keep < kept do
    if now - log[i] < ttl then
      keep[#keep + 1] = log[i]
    else
      contiguous = false
    end
    i = i - 1
  end
  if contiguous then
    -- the kept attempts are the list's tail: trim the head, push now
    if kept == 0 then
      redis.call('DEL', key)
    elseif n > kept then
      redis.call('LTRIM', key, n - kept, -1)
    end
    redis.call('RPUSH', key, fmt(now))
  else
    local values = {}
    for j = #keep, 1, -1 do
      values[#values + 1] = fmt(keep[j])
    end
    values[#values + 1] = fmt(now)
    redis.call('DEL', key)
    redis.call('RPUSH', key, unpack(values))
  end
  local newest = now
  for j = 1, #keep do
    if keep[j] > newest then newest = keep[j] end
  end
  redis.call('PEXPIRE', key, fmt(newest + ttl - now))
  return {1, threshold, math.max(0, threshold - (kept + 1)), 0, ttl}
end
return redis.error_reply('unknown operation ' .. tostring(op))
