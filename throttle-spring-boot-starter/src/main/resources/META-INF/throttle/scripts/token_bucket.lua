-- Token bucket: the twin of TokenBucketPolicy.Transition, function for function.
--
-- State    "<used>:<refilledAt ms>": tokens taken and not yet refilled; none = a full bucket.
--          Used rather than left, so that a key's state means the same under other numbers of its
--          policy (a plan, a change at run time): left = capacity - used, below 0 when a smaller
--          capacity applies than the tokens were taken under (told as 0).
-- P        {capacity, refillTokens, periodMillis}
-- Receipt  when the call's last token is back: refilledAt + ceil(used / refillTokens) * period,
--          with used right after the call
--
-- Refill gives back refillTokens per whole period elapsed since refilledAt and moves refilledAt by
-- exactly those periods, so the part of a period already elapsed is kept; a full bucket restarts
-- its clock at now (time spent full earns nothing). A refilledAt after now has earned nothing yet.
-- The next unit comes with the next refill. Tokens come back in the order they were taken, so a
-- refund with a receipt gives back what the refills up to the receipt have yet to bring (whole
-- refills), never more than its cost nor than the bucket misses; nothing once they are back.
local capacity, refillTokens, periodMillis = P[1], P[2], P[3]
local used, refilledAt = countAndTime()
if used ~= nil then
  -- no policy takes more than 2^23 - 1 tokens (the memory store's packed count)
  used = math.min(used, 8388607)
end

-- the state refilled to now: (used, refilledAt)
local function refill()
  if used == nil or used <= 0 then
    return 0, now
  end
  local elapsed = now - refilledAt
  if elapsed < periodMillis then
    return used, refilledAt
  end
  local periods = floor(elapsed / periodMillis)
  if periods >= ceilDiv(used, refillTokens) then
    return 0, now
  end
  return used - periods * refillTokens, refilledAt + periods * periodMillis
end

local function fullAt(u, at)
  return at + ceilDiv(u, refillTokens) * periodMillis
end

local function untilFull(u, at)
  if u <= 0 then
    return 0
  end
  return math.max(0, fullAt(u, at) - now)
end

local function untilNextRefill(u, at)
  if u <= 0 then
    return 0
  end
  return at + periodMillis - now
end

local function rejected(u, at, c)
  local t = capacity - u
  return {0, capacity, math.max(0, t), at + ceilDiv(c - t, refillTokens) * periodMillis - now, untilFull(u, at), 0}
end

local function store(u, at)
  redis.call('SET', key, fmt(u) .. ':' .. fmt(at), 'PX', fmt(math.max(1, untilFull(u, at))))
end

local u, at = refill()
if op == 'a' then
  if capacity - u < cost then
    return rejected(u, at, cost)
  end
  store(u + cost, at)
  return {1, capacity, math.max(0, capacity - u - cost), untilNextRefill(u + cost, at), untilFull(u + cost, at),
    math.max(1, fullAt(u + cost, at))}
elseif op == 'p' then
  if capacity - u >= 1 then
    return {1, capacity, capacity - u, untilNextRefill(u, at), untilFull(u, at), 0}
  end
  return rejected(u, at, 1)
elseif op == 'r' then
  if used ~= nil then
    local left = u - cost
    if receipt ~= nil then
      local untilBack = receipt - at
      if u <= 0 or untilBack <= 0 then
        -- every token the call took is back already
        return {}
      end
      left = u - math.min(cost, ceilDiv(untilBack, periodMillis) * refillTokens, u)
    end
    if left <= 0 then
      redis.call('DEL', key)
    else
      store(left, at)
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
