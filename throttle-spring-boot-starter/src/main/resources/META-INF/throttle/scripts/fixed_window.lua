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
local limit, windowMillis = P[1], P[2]

-- the open window: (count, start), or nil
local count, start = countAndTime()
if count ~= nil and now - start >= windowMillis then
  count, start = nil, nil
end

-- units left in a window; none when it holds more than the limit (state of a larger limit)
local function remaining(c)
  return math.max(0, limit - c)
end

local function store(c, s)
  redis.call('SET', key, fmt(c) .. ':' .. fmt(s), 'PX', fmt(s + windowMillis - now))
end

local function rejected(c, s)
  local untilEnd = s + windowMillis - now
  return {0, limit, remaining(c), untilEnd, untilEnd, 0}
end

if op == 'a' then
  local c, s = count or 0, start or now
  if c + cost > limit then
    return rejected(c, s)
  end
  store(c + cost, s)
  return {1, limit, remaining(c + cost), s + windowMillis - now, s + windowMillis - now, math.max(1, s)}
elseif op == 'p' then
  if count == nil then
    return {1, limit, limit, 0, 0, 0}
  end
  if count < limit then
    return {1, limit, remaining(count), start + windowMillis - now, start + windowMillis - now, 0}
  end
  return rejected(count, start)
elseif op == 'r' then
  if receipt ~= nil and (count == nil or math.max(1, start) ~= receipt) then
    -- the call's window has ended: what it took went with it
    return {}
  end
  if count == nil or count <= cost then
    redis.call('DEL', key)
  else
    store(count - cost, start)
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
