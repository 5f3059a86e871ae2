-- Escalating lockout: the twin of LockoutPolicy.Transition, function for function.
--
-- State    "<index>:<lastAllowed ms>"; none = never used
-- P        {expireAfterMillis, then the ladder of timeouts in milliseconds, rung 0 first}
-- Receipt  the attempt's time, its lastAllowed
--
-- The first attempt passes and stores (0, now); a later one passes when now - lastAllowed >=
-- timeouts[index] and stores (min(index + 1, last rung), now). State idle for expire-after counts
-- as never used; a lastAllowed after now is kept, so the wait runs from it. An allowed attempt's
-- next unit is its rung's timeout away. A refund steps back one rung: (i, t) becomes
-- (i - 1, t - timeouts[i - 1]); with a receipt, only while that attempt is still the last allowed
-- one.
local expireAfterMillis = P[1]
local lastRung = #P - 2

local function timeout(i)
  return P[2 + i]
end

-- the state in use: (index, lastAllowed), or nil
local index, lastAllowed = countAndTime(raw, now)
if index ~= nil and now - lastAllowed >= expireAfterMillis then
  index, lastAllowed = nil, nil
end
if index ~= nil then
  -- one written under a longer ladder stands on this ladder's top rung
  index = math.min(index, lastRung)
end

local function store(i, t)
  redis.call('SET', key, fmt(i) .. ':' .. fmt(t), 'PX', fmt(t + expireAfterMillis - now))
end

local function rejected()
  return {0, 1, 0, lastAllowed + timeout(index) - now, lastAllowed + expireAfterMillis - now, 0}
end

if op == 'a' then
  if index == nil then
    store(0, now)
    return {1, 1, 0, timeout(0), expireAfterMillis, math.max(1, now)}
  end
  if now - lastAllowed < timeout(index) then
    return rejected()
  end
  local next = math.min(index + 1, lastRung)
  store(next, now)
  return {1, 1, 0, timeout(next), expireAfterMillis, math.max(1, now)}
elseif op == 'p' then
  if index == nil then
    return {1, 1, 1, 0, 0, 0}
  end
  if now - lastAllowed >= timeout(index) then
    return {1, 1, 1, 0, lastAllowed + expireAfterMillis - now, 0}
  end
  return rejected()
elseif op == 'r' then
  if receipt ~= nil and (index == nil or math.max(1, lastAllowed) ~= receipt) then
    -- a later attempt came, or the state expired or was reset: the call's rung is not the last
    return {}
  end
  if index == nil or index == 0 then
    redis.call('DEL', key)
  else
    local previous = index - 1
    local moved = lastAllowed - timeout(previous)
    if now - moved >= expireAfterMillis then
      -- already as good as never used (and PX must be positive)
      redis.call('DEL', key)
    else
      store(previous, moved)
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
