-- Token bucket: the twin of TokenBucketPolicy.Transition, function for function.
--
-- State    "<tokens>:<refilledAt ms>"; none = a full bucket
-- P        {capacity, refillTokens, periodMillis}
-- Receipt  when the call's last token is back: refilledAt + ceil(missing / refillTokens) * period,
--          with missing the tokens short of full right after the call
--
-- Refill adds refillTokens per whole period elapsed since refilledAt and moves refilledAt by
-- exactly those periods, so the part of a period already elapsed is kept; a full bucket restarts
-- its clock at now (time spent full earns nothing). A refilledAt after now has earned nothing yet.
-- The next unit comes with the next refill. Tokens come back in the order they were taken, so a
-- refund with a receipt gives back what the refills up to the receipt have yet to bring (whole
-- refills), never more than its cost nor than the bucket misses; nothing once they are back.
local capacity, refillTokens, periodMillis = P[1], P[2], P[3]
local tokens, refilledAt = countAndTime()

-- the state refilled to now: (tokens, refilledAt)
local function refill()
  if tokens == nil or tokens >= capacity then
    return capacity, now
  end
  local elapsed = now - refilledAt
  if elapsed < periodMillis then
    return tokens, refilledAt
  end
  local periods = floor(elapsed / periodMillis)
  if periods >= ceilDiv(capacity - tokens, refillTokens) then
    return capacity, now
  end
  return tokens + periods * refillTokens, refilledAt + periods * periodMillis
end

local function fullAt(t, at)
  return at + ceilDiv(capacity - t, refillTokens) * periodMillis
end

local function untilFull(t, at)
  if t >= capacity then
    return 0
  end
  return math.max(0, fullAt(t, at) - now)
end

local function untilNextRefill(t, at)
  if t >= capacity then
    return 0
  end
  return at + periodMillis - now
end

local function rejected(t, at, c)
  return {0, capacity, t, at + ceilDiv(c - t, refillTokens) * periodMillis - now, untilFull(t, at), 0}
end

local function store(t, at)
  redis.call('SET', key, fmt(t) .. ':' .. fmt(at), 'PX', fmt(math.max(1, untilFull(t, at))))
end

local t, at = refill()
if op == 'a' then
  if t < cost then
    return rejected(t, at, cost)
  end
  store(t - cost, at)
  return {1, capacity, t - cost, untilNextRefill(t - cost, at), untilFull(t - cost, at),
    math.max(1, fullAt(t - cost, at))}
elseif op == 'p' then
  if t >= 1 then
    return {1, capacity, t, untilNextRefill(t, at), untilFull(t, at), 0}
  end
  return rejected(t, at, 1)
elseif op == 'r' then
  if tokens ~= nil then
    local back = t + cost
    if receipt ~= nil then
      local untilBack = receipt - at
      if t >= capacity or untilBack <= 0 then
        -- every token the call took is back already
        return {}
      end
      back = t + math.min(cost, ceilDiv(untilBack, periodMillis) * refillTokens, capacity - t)
    end
    if back >= capacity then
      redis.call('DEL', key)
    else
      store(back, at)
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
