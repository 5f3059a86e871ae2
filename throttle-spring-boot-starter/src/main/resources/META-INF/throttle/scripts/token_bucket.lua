-- Token bucket: the twin of TokenBucketPolicy.Transition, function for function.
--
-- State  "<tokens>:<refilledAt ms>"; none = a full bucket
-- P      {capacity, refillTokens, periodMillis}
--
-- Refill adds refillTokens per whole period elapsed since refilledAt and moves refilledAt by
-- exactly those periods, so the part of a period already elapsed is kept; a full bucket restarts
-- its clock at now (time spent full earns nothing). A refilledAt after now has earned nothing yet.
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

local function untilFull(t, at)
  if t >= capacity then
    return 0
  end
  return math.max(0, at + ceilDiv(capacity - t, refillTokens) * periodMillis - now)
end

local function allowed(t, at)
  return {1, capacity, t, 0, untilFull(t, at)}
end

local function rejected(t, at, c)
  return {0, capacity, t, at + ceilDiv(c - t, refillTokens) * periodMillis - now, untilFull(t, at)}
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
  return allowed(t - cost, at)
elseif op == 'p' then
  if t >= 1 then
    return allowed(t, at)
  end
  return rejected(t, at, 1)
elseif op == 'r' then
  if tokens ~= nil then
    t = math.min(capacity, t + cost)
    if t >= capacity then
      redis.call('DEL', key)
    else
      store(t, at)
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
