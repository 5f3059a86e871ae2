-- Concurrency slots: the twin of ConcurrencyTransition, function for function.
--
-- State    "C", the last slot id the key gave, then the ids of the slots it holds, oldest first,
--          16 digits each; none = no slot ever given (or forgotten)
-- P        {limit, leaseMillis, hintMillis (ConcurrencyPolicy.RETRY_HINT)}
-- Receipt  the slot's id
--
-- A slot taken at now gets the id max(last + 1, now * 1000 + 1): ids ascend and carry the time they
-- were taken (id / 1000). A slot is held while id >= (now - lease + 1) * 1000; the ids ascend, so
-- the slots whose lease ran out are a prefix, dropped by the next call that takes a slot (one
-- round trip: taking clears them). A refund with a receipt frees the slot with that id, and nothing
-- when no slot has it (freed already, or dropped once its lease ran out), so a late or second
-- release never frees another call's slot; without one, it frees the newest slot held. The last
-- id stays after the last slot is freed, and the key expires when the last id's lease runs out, so
-- an id is never given twice. What a caller is told of when a slot frees is a hint: the time
-- until the oldest slot's lease runs out, at most hintMillis.
local limit, leaseMillis, hintMillis = P[1], P[2], P[3]
local width = 16
local ids = 1000

-- whether s is a slot id: a whole number from 1 to 2^53 whose time is within the horizon
-- (prelude.lua) of now; false for nil, inf, -inf, nan, 1e300
local function isId(s)
  return s ~= nil and s == floor(s) and s >= 1 and s < 2^53 and floor(s / ids) <= now + HORIZON
end

-- the list: the last id at raw[2, 1 + width], slot i at raw[2 + i * width, 1 + (i + 1) * width]
local n = 0
local last = 0
if raw and string.sub(raw, 1, 1) == 'C' and #raw > width and (#raw - 1) % width == 0 then
  last = tonumber(string.sub(raw, 2, 1 + width))
  if isId(last) then
    n = (#raw - 1) / width - 1
  else
    last = 0
  end
end

-- slot i's id
local function slot(i)
  return tonumber(string.sub(raw, 2 + i * width, 1 + (i + 1) * width))
end

-- a list with an id that is not one (only another writer leaves one) counts as no slots, its last
-- id kept when it is one
for i = 1, n do
  local s = slot(i)
  if not isId(s) or s > last then
    n = 0
    break
  end
end

-- the first slot still held; n + 1 when none is
local lowest = (now - leaseMillis + 1) * ids
local first = 1
while first <= n do
  if slot(first) >= lowest then
    break
  end
  first = first + 1
end
local live = n - first + 1

-- until a slot's lease runs out, and the hint of when one frees
local function untilExpiry(s)
  return floor(s / ids) + leaseMillis - now
end
local function hint(s)
  return math.max(1, math.min(hintMillis, untilExpiry(s)))
end

if op == 'r' then
  if n == 0 then
    return {}
  end
  local at = nil
  if receipt ~= nil then
    for i = n, 1, -1 do
      local s = slot(i)
      if s == receipt then
        at = i
        break
      end
      if s < receipt then
        break
      end
    end
  elseif live > 0 then
    at = n
  end
  if at == nil then
    return {}
  end
  local rest = string.sub(raw, 1, 1 + at * width) .. string.sub(raw, 2 + (at + 1) * width)
  local left = untilExpiry(last)
  if left <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, rest, 'PX', fmt(left))
  end
  return {}
end

if op == 'p' then
  if live == 0 then
    return {1, limit, limit, 0, 0, 0}
  end
  return {(live < limit) and 1 or 0, limit, math.max(0, limit - live), hint(slot(first)), untilExpiry(slot(n)), 0}
elseif op == 'a' then
  if live + 1 > limit then
    return {0, limit, math.max(0, limit - live), hint(slot(first)), untilExpiry(slot(n)), 0}
  end
  local id = math.max(last + 1, now * ids + 1)
  local held = (live > 0) and string.sub(raw, 2 + first * width) or ''
  redis.call('SET', key, 'C' .. string.format('%016d', id) .. held .. string.format('%016d', id),
    'PX', fmt(untilExpiry(id)))
  return {1, limit, math.max(0, limit - (live + 1)), hint((live > 0) and slot(first) or id), untilExpiry(id), id}
end
return redis.error_reply('unknown operation ' .. tostring(op))
