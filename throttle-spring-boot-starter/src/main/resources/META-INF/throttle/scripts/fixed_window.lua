-- Fixed window: the twin of FixedWindowPolicy.Transition, function for function.
--
-- State    "<count>:<windowStart ms>"; none = no window open; "n<count>:<windowStart ms>" = the
--          window is full and <count> calls are reserved in the next one (see below)
-- P        {limit, windowMillis}
-- Receipt  the start of the window the call counted in
--
-- A window starts at the key's first call after the previous one ended (now >= start + window);
-- a call passes while count + cost <= limit. A window that starts after now is still the current
-- one. The next unit comes when the window ends. Windows start at least a window apart, so a
-- receipt names one window: a refund with it gives back to that window while it is open, and
-- nothing once it has ended.
--
-- The transition's small functions are written out where they are used (prelude.lua says why):
--   remaining(c)   = max(0, limit - c), units left in a window; none when it holds more than the
--                    limit (state of a larger limit)
--   rejected(c, s) = {0, limit, remaining(c), s + windowMillis - now, s + windowMillis - now, 0}
--   store(c, s)    SET "<c>:<s>" PX s + windowMillis - now
--
-- Reservations (w): a call that does not fit the current window is let into the next one, which
-- starts exactly when the current one ends, when that is within maxWait; never into the one after.
-- The state is then "n<next count>:<current start>": the current window counts as full, every call
-- that does not wait is refused until it ends, and then the next window is the current one with its
-- count. A reservation's receipt is the next window's start. A refund of a reservation by its
-- receipt gives back to the next window; of a call of the full current window, nothing while the
-- next one holds reservations.
local limit, windowMillis = P[1], P[2]

-- the open window: (count, start), or nil; or, marked, the reservations in the next window
local count, start = countAndTime(raw, now)
local nextCount = nil
if count == nil and raw and sub(raw, 1, 1) == 'n' then
  nextCount, start = countAndTime(sub(raw, 2), now)
  if nextCount ~= nil and now - start >= windowMillis then
    -- the full window ended: the next one is the current one, with its reservations
    count, start, nextCount = nextCount, start + windowMillis, nil
  end
end
if count ~= nil and now - start >= windowMillis then
  count, start = nil, nil
end

if nextCount ~= nil then
  -- the current window is full; the next holds nextCount reservations
  local untilNext = start + windowMillis - now
  local untilAfter = untilNext + windowMillis
  if op == 'a' or op == 'p' then
    local c = (op == 'a') and cost or 1
    return {0, limit, 0, (nextCount + c <= limit) and untilNext or untilAfter, untilAfter, 0}
  elseif op == 'w' then
    if nextCount + cost > limit or untilNext > maxWait then
      return {0, limit, 0, (nextCount + cost <= limit) and untilNext or untilAfter, untilAfter, 0}
    end
    redis.call('SET', key, format('n%d:%d', nextCount + cost, start), 'PX', fmt(untilAfter))
    return {1, limit, 0, (nextCount + cost < limit) and untilNext or untilAfter, untilAfter,
      math.max(1, start + windowMillis), untilNext}
  elseif op == 'c' then
    -- a debt is carried into the next window only, at most maxDebt and the next window's limit
    local more = math.max(nextCount, math.min(nextCount + cost, maxDebt, limit))
    if more ~= nextCount then
      redis.call('SET', key, format('n%d:%d', more, start), 'PX', fmt(untilAfter))
    end
    return {more}
  elseif op == 'r' then
    if receipt ~= nil and math.max(1, start + windowMillis) ~= receipt then
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
  local c, s = count or 0, start or now
  local untilEnd = s + windowMillis - now
  if c + cost > limit then
    -- rejected(c, s)
    return {0, limit, (limit - c > 0) and (limit - c) or 0, untilEnd, untilEnd, 0}
  end
  -- store(c + cost, s)
  redis.call('SET', key, format('%d:%d', c + cost, s), 'PX', fmt(untilEnd))
  return {1, limit, math.max(0, limit - (c + cost)), untilEnd, untilEnd, math.max(1, s)}
elseif op == 'p' then
  if count == nil then
    return {1, limit, limit, 0, 0, 0}
  end
  local untilEnd = start + windowMillis - now
  if count < limit then
    return {1, limit, limit - count, untilEnd, untilEnd, 0}
  end
  -- rejected(count, start)
  return {0, limit, (limit - count > 0) and (limit - count) or 0, untilEnd, untilEnd, 0}
elseif op == 'r' then
  if receipt ~= nil and (count == nil or math.max(1, start) ~= receipt) then
    -- the call's window has ended: what it took went with it
    return {}
  end
  if count == nil or count <= cost then
    redis.call('DEL', key)
  else
    -- store(count - cost, start)
    redis.call('SET', key, format('%d:%d', count - cost, start), 'PX', fmt(start + windowMillis - now))
  end
  return {}
elseif op == 'w' then
  local c, s = count or 0, start or now
  local untilEnd = s + windowMillis - now
  if c + cost <= limit then
    -- as an acquire
    redis.call('SET', key, format('%d:%d', c + cost, s), 'PX', fmt(untilEnd))
    return {1, limit, math.max(0, limit - (c + cost)), untilEnd, untilEnd, math.max(1, s), 0}
  end
  if untilEnd > maxWait then
    -- as an acquire refuses
    return {0, limit, (limit - c > 0) and (limit - c) or 0, untilEnd, untilEnd, 0}
  end
  redis.call('SET', key, format('n%d:%d', cost, s), 'PX', fmt(untilEnd + windowMillis))
  return {1, limit, 0, (cost < limit) and untilEnd or (untilEnd + windowMillis), untilEnd + windowMillis,
    math.max(1, s + windowMillis), untilEnd}
elseif op == 'c' then
  -- a charge after the call counts in the current window; what does not fit is carried into the
  -- next window as reservations are (the current one counts as full), at most maxDebt units and the
  -- next window's limit
  local c, s = count or 0, start or now
  local untilEnd = s + windowMillis - now
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
  redis.call('SET', key, format('n%d:%d', carry, s), 'PX', fmt(untilEnd + windowMillis))
  return {carry}
end
return redis.error_reply('unknown operation ' .. tostring(op))
