-- Fixed window of the calendar: fixed_window.lua for windows that start at the calendar's
-- boundaries (a day, an ISO week or a month in a zone: FixedWindowPolicy.calendar()) rather than at
-- the key's first call; the twin of the same FixedWindowPolicy.Transition, function for function.
-- The state, the receipt, the reservations (w) and the debt (c) are fixed_window.lua's; where that
-- script adds windowMillis to a window's start, this one takes the next boundary.
--
-- State    "<count>:<windowStart ms>"; none = no window open; "n<count>:<windowStart ms>" = the
--          window is full and <count> calls are reserved in the next one
-- P        {limit, 0}
-- ARGV[5]  the calendar's boundaries, six epoch milliseconds joined by ",", ascending
--          (FixedWindowPolicy.boundaries): the starts of the two windows before the one holding
--          the application's time, of that window, and of the three after it
--
-- Why the boundaries come from the application: a zone's rules (its daylight-saving changes, its
-- offsets over the years) live in the JVM's time-zone data, which Lua cannot read. Why the script
-- still decides on its own time: the application's clock may be off, and a call near a boundary
-- must fall in the window that Redis's clock says, as every other call of every instance does. So
-- the application sends the windows around its own time, and the script picks, by its own now, the
-- one that holds it: any now from the second boundary to the fifth (at least a whole window either
-- side of the application's time) finds its window, the one before it and the one after it. A now
-- outside them (a clock off by more than a window) is an error, never a guess.
local limit = P[1]

local B = {}
for b in string.gmatch(ARGV[5] or '', '[^,]+') do
  B[#B + 1] = tonumber(b)
end
if #B ~= 6 or not (now >= B[2] and now < B[5]) then
  return redis.error_reply('throttle: the calendar window of time ' .. fmt(now) .. ' is not among those the'
    .. ' application sent (' .. tostring(ARGV[5]) .. '): its clock and the Redis server\'s differ by more than'
    .. ' a window')
end

-- the end of the window holding t (a window's start, usually): the first boundary after it. A start
-- before B[1] ends by B[1] at the latest, and now is past B[2], so its window and the one after it
-- have ended whichever boundary that is; a start past B[6] (Redis time stepped back by windows)
-- is taken to last as long as the last window.
local function endOf(t)
  for j = 1, 6 do
    if B[j] > t then
      return B[j]
    end
  end
  return t + (B[6] - B[5])
end

-- the start of the window a call at now opens: the boundary before now
local nowStart = B[2]
if now >= B[4] then
  nowStart = B[4]
elseif now >= B[3] then
  nowStart = B[3]
end

-- the open window: (count, start), or nil; or, marked, the reservations in the next window
local count, start = countAndTime(raw, now)
local nextCount = nil
if count == nil and raw and sub(raw, 1, 1) == 'n' then
  nextCount, start = countAndTime(sub(raw, 2), now)
  if nextCount ~= nil then
    local ended = endOf(start)
    if now >= ended then
      -- the full window ended: the next one is the current one, with its reservations
      count, start, nextCount = nextCount, ended, nil
    end
  end
end
if count ~= nil and now >= endOf(start) then
  count, start = nil, nil
end

if nextCount ~= nil then
  -- the current window is full; the next holds nextCount reservations
  local nextStart = endOf(start)
  local untilNext = nextStart - now
  local untilAfter = endOf(nextStart) - now
  if op == 'a' or op == 'p' then
    local c = (op == 'a') and cost or 1
    return {0, limit, 0, (nextCount + c <= limit) and untilNext or untilAfter, untilAfter, 0}
  elseif op == 'w' then
    if nextCount + cost > limit or untilNext > maxWait then
      return {0, limit, 0, (nextCount + cost <= limit) and untilNext or untilAfter, untilAfter, 0}
    end
    redis.call('SET', key, format('n%d:%d', nextCount + cost, start), 'PX', fmt(untilAfter))
    return {1, limit, 0, (nextCount + cost < limit) and untilNext or untilAfter, untilAfter,
      math.max(1, nextStart), untilNext}
  elseif op == 'c' then
    -- a debt is carried into the next window only, at most maxDebt and the next window's limit
    local more = math.max(nextCount, math.min(nextCount + cost, maxDebt, limit))
    if more ~= nextCount then
      redis.call('SET', key, format('n%d:%d', more, start), 'PX', fmt(untilAfter))
    end
    return {more}
  elseif op == 'r' then
    if receipt ~= nil and math.max(1, nextStart) ~= receipt then
      -- a call of the full current window: nothing back while the next one holds reservations
      return {}
    end
    if nextCount <= cost then
      redis.call('SET', key, format('%d:%d', limit, start), 'PX', fmt(untilNext))
    else
      redis.call('SET', key, format('n%d:%d', nextCount - cost, start), 'PX', fmt(untilAfter))
    end
    return {}
  end
end

if op == 'a' then
  local c, s = count or 0, start or nowStart
  local untilEnd = endOf(s) - now
  if c + cost > limit then
    return {0, limit, (limit - c > 0) and (limit - c) or 0, untilEnd, untilEnd, 0}
  end
  redis.call('SET', key, format('%d:%d', c + cost, s), 'PX', fmt(untilEnd))
  return {1, limit, math.max(0, limit - (c + cost)), untilEnd, untilEnd, math.max(1, s)}
elseif op == 'p' then
  if count == nil then
    return {1, limit, limit, 0, 0, 0}
  end
  local untilEnd = endOf(start) - now
  if count < limit then
    return {1, limit, limit - count, untilEnd, untilEnd, 0}
  end
  return {0, limit, (limit - count > 0) and (limit - count) or 0, untilEnd, untilEnd, 0}
elseif op == 'r' then
  if receipt ~= nil and (count == nil or math.max(1, start) ~= receipt) then
    -- the call's window has ended: what it took went with it
    return {}
  end
  if count == nil or count <= cost then
    redis.call('DEL', key)
  else
    redis.call('SET', key, format('%d:%d', count - cost, start), 'PX', fmt(endOf(start) - now))
  end
  return {}
elseif op == 'w' then
  local c, s = count or 0, start or nowStart
  local ends = endOf(s)
  local untilEnd = ends - now
  if c + cost <= limit then
    -- as an acquire
    redis.call('SET', key, format('%d:%d', c + cost, s), 'PX', fmt(untilEnd))
    return {1, limit, math.max(0, limit - (c + cost)), untilEnd, untilEnd, math.max(1, s), 0}
  end
  if untilEnd > maxWait then
    -- as an acquire refuses
    return {0, limit, (limit - c > 0) and (limit - c) or 0, untilEnd, untilEnd, 0}
  end
  local untilAfter = endOf(ends) - now
  redis.call('SET', key, format('n%d:%d', cost, s), 'PX', fmt(untilAfter))
  return {1, limit, 0, (cost < limit) and untilEnd or untilAfter, untilAfter, math.max(1, ends), untilEnd}
elseif op == 'c' then
  -- a charge after the call counts in the current window; what does not fit is carried into the
  -- next window as reservations are, at most maxDebt units and the next window's limit
  local c, s = count or 0, start or nowStart
  local ends = endOf(s)
  local untilEnd = ends - now
  local total = c + cost
  if total <= limit then
    redis.call('SET', key, format('%d:%d', total, s), 'PX', fmt(untilEnd))
    return {0}
  end
  local carry = math.min(total - math.max(c, limit), maxDebt, limit)
  if carry <= 0 then
    redis.call('SET', key, format('%d:%d', math.max(c, limit), s), 'PX', fmt(untilEnd))
    return {0}
  end
  redis.call('SET', key, format('n%d:%d', carry, s), 'PX', fmt(endOf(ends) - now))
  return {carry}
end
return redis.error_reply('unknown operation ' .. tostring(op))
