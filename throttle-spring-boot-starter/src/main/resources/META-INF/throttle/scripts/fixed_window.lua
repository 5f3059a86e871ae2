-- Fixed window: the twin of FixedWindowPolicy.Transition, function for function.
--
-- State    "<count>:<windowStart ms>"; none = no window open
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
local limit, windowMillis = P[1], P[2]

-- the open window: (count, start), or nil
local count, start = countAndTime(raw, now)
if count ~= nil and now - start >= windowMillis then
  count, start = nil, nil
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
end
return redis.error_reply('unknown operation ' .. tostring(op))
