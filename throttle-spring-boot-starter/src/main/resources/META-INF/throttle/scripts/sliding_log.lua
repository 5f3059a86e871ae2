-- Sliding log with a growing delay (metabase's check): the twin of SlidingLogPolicy.Transition,
-- function for function.
--
-- State    "L" and the times (epoch ms) of recent allowed attempts, oldest first, 15 digits each;
--          none = no attempts
-- P        {threshold, ttlMillis, maxEntries (SlidingLogPolicy.maxEntries()), then the delays in
--          milliseconds (SlidingLogPolicy.delaysMillis()): the delay for over = i is P[3 + i]}
-- Receipt  the attempt's recorded time
--
-- An attempt with now - t >= ttl no longer counts. With c live attempts, over = c + 1 - threshold;
-- when over > 0 the call must come delays[over] after the most recent attempt. A refused call is
-- not recorded; an allowed one keeps at most maxEntries - 1 live attempts and adds itself, at now
-- or, when now is before the most recent time, at that time: the times stay in order and the
-- attempt counts no shorter. The wait (a refusal's retry-after, and the next unit once no attempt
-- is left before delays apply) is the earliest time at which the delay after the newest attempt
-- has passed counting only the attempts still live then; before that, the next unit comes when the
-- oldest live attempt ages out. A refund with a receipt removes a live attempt with that time, and
-- nothing once it has aged out; without one, the most recent attempt.
--
-- Why one fixed-width string rather than a Redis list: the times ascend, so the live ones are the
-- string's tail, and a decision reads one value and finds the first live time by binary search (a
-- few string.sub calls) instead of converting every entry; a refused call on a hot key, the
-- abuser's case, touches no more than that. The leading "L" keeps the value from reading as a
-- number to the other scripts.
-- whether t is a time in milliseconds that can be read now: a whole number within the horizon
-- (prelude.lua) of now; false for nil, inf, -inf, nan, 1e300
local function isTime(t)
  return t ~= nil and t == floor(t) and t >= now - HORIZON and t <= now + HORIZON
end

local threshold, ttlMillis, maxEntries = P[1], P[2], P[3]
local delays = #P - 3
local width = 15

-- the log: n times, time i at raw[2 + (i - 1) * width, 1 + i * width]; the newest is time n
local n = 0
local newest
if raw and string.sub(raw, 1, 1) == 'L' and (#raw - 1) % width == 0 then
  n = (#raw - 1) / width
  newest = (n > 0) and tonumber(string.sub(raw, #raw - width + 1)) or nil
  if not isTime(newest) then
    n = 0
  end
end

-- time i as a number, or nil when it is not one (state from another writer, or out of range)
local function entry(i)
  local t = tonumber(string.sub(raw, 2 + (i - 1) * width, 1 + i * width))
  return isTime(t) and t or nil
end

-- How many times still count: the tail after the last one that is ttl old. The oldest is looked
-- at first (in a log an abuser keeps full every time counts, and one probe decides), then a
-- binary search between the oldest, which no longer counts, and the newest. A log in which the
-- search meets a time that is not one counts as empty (only another writer leaves one; checking
-- every time on every call would cost more than the decision).
local function live()
  if n == 0 or now - newest >= ttlMillis then
    return 0
  end
  local oldest = entry(1)
  if oldest == nil then
    return 0
  end
  if now - oldest < ttlMillis then
    return n
  end
  local lo, hi = 2, n
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    local t = entry(mid)
    if t == nil then
      return 0
    end
    if now - t < ttlMillis then hi = mid else lo = mid + 1 end
  end
  return n - lo + 1
end

local function delay(over)
  return P[3 + math.min(over, delays)]
end

-- How long the next attempt must still wait with c live attempts, the newest at last and the k-th
-- oldest live one oldest(k): the earliest time at which the delay after the newest has passed,
-- counting only the attempts still live then (each one ageing out lowers over by one); 0 when it
-- may pass now.
local function waitFor(c, last, oldest)
  local over = c + 1 - threshold
  if over <= 0 then
    return 0
  end
  local best = last + delay(over)
  for k = 1, over do
    local t = oldest(k)
    if t == nil or t + ttlMillis >= best then
      break
    end
    if over - k <= 0 then
      best = t + ttlMillis
    else
      best = math.max(t + ttlMillis, last + delay(over - k))
    end
  end
  return math.max(0, best - now)
end

-- until one attempt more than the c live ones would leave before delays apply, or may pass
local function untilNextUnit(c, last, oldest)
  if c == 0 then
    return 0
  end
  if c < threshold then
    return oldest(1) + ttlMillis - now
  end
  return waitFor(c, last, oldest)
end

local c = live()
local function liveEntry(k)
  return entry(n - c + k)
end

if op == 'r' then
  if n == 0 then
    return {}
  end
  local at = n
  if receipt ~= nil then
    -- the newest live attempt with the receipt's time: the times ascend, so search from the end
    at = nil
    for i = n, n - c + 1, -1 do
      local t = entry(i)
      if t == nil or t < receipt then
        break
      end
      if math.max(1, t) == receipt then
        at = i
        break
      end
    end
    if at == nil then
      return {}
    end
  end
  if n <= 1 then
    redis.call('DEL', key)
    return {}
  end
  local rest = string.sub(raw, 1, 1 + (at - 1) * width) .. string.sub(raw, 2 + at * width)
  local last = (at == n) and entry(n - 1) or newest
  local left = last and (last + ttlMillis - now) or 0
  if left <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, rest, 'PX', fmt(left))
  end
  return {}
end

local w = waitFor(c, newest, liveEntry)
if op == 'p' then
  if c == 0 then
    return {1, threshold, threshold, 0, 0, 0}
  end
  if w > 0 then
    return {0, threshold, 0, w, newest + ttlMillis - now, 0}
  end
  return {1, threshold, math.max(0, threshold - c), untilNextUnit(c, newest, liveEntry), newest + ttlMillis - now, 0}
elseif op == 'a' then
  if w > 0 then
    return {0, threshold, 0, w, newest + ttlMillis - now, 0}
  end
  -- keep the newest min(live, maxEntries - 1) times (the string's tail), then add this attempt
  local kept = math.min(c, maxEntries - 1)
  local tail = (kept > 0) and string.sub(raw, #raw - kept * width + 1) or ''
  local at = (n > 0) and math.max(now, newest) or now
  redis.call('SET', key, 'L' .. tail .. string.format('%015d', at), 'PX', fmt(at + ttlMillis - now))
  local function nextEntry(k)
    if k <= kept then
      return entry(n - kept + k)
    end
    return at
  end
  return {1, threshold, math.max(0, threshold - (kept + 1)), untilNextUnit(kept + 1, at, nextEntry),
    at + ttlMillis - now, math.max(1, at)}
end
return redis.error_reply('unknown operation ' .. tostring(op))
