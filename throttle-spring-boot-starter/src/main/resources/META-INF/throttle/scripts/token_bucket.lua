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
--
-- The transition's small functions are written out where they are used (prelude.lua says why):
--   refill()          the state refilled to now, (u, at) below
--   fullAt(u, at)     = at + ceilDiv(u, refillTokens) * periodMillis, when u tokens in use are back
--   untilFull(u, at)  = 0 when u <= 0, else max(0, fullAt(u, at) - now)
--   untilNextRefill   = 0 when u <= 0, else at + periodMillis - now
--   rejected(u, at, c) = {0, capacity, max(0, capacity - u),
--                         at + ceilDiv(c - (capacity - u), refillTokens) * periodMillis - now, untilFull(u, at), 0}
--   store(u, at)      SET "<u>:<at>" PX max(1, untilFull(u, at))
-- with ceilDiv(a, b) = floor((a + b - 1) / b).
local capacity, refillTokens, periodMillis = P[1], P[2], P[3]
local used, refilledAt = countAndTime(raw, now)
if used ~= nil and used > 8388607 then
  -- no policy takes more than 2^23 - 1 tokens (the memory store's packed count)
  used = 8388607
end

-- refill(): (u, at), the state refilled to now; a full bucket (nothing used) restarts at now
local u, at = 0, now
if used ~= nil and used > 0 then
  local elapsed = now - refilledAt
  if elapsed < periodMillis then
    u, at = used, refilledAt
  else
    local periods = floor(elapsed / periodMillis)
    if periods < floor((used + refillTokens - 1) / refillTokens) then
      u, at = used - periods * refillTokens, refilledAt + periods * periodMillis
    end
  end
end

-- untilFull(u, at): what a refusal and a peek answer as resetAfterMillis
local untilFull = 0
if u > 0 then
  untilFull = at + floor((u + refillTokens - 1) / refillTokens) * periodMillis - now
  if untilFull < 0 then
    untilFull = 0
  end
end

if op == 'a' then
  local left = capacity - u
  if left < cost then
    -- rejected(u, at, cost)
    return {0, capacity, (left > 0) and left or 0,
      at + floor((cost - left + refillTokens - 1) / refillTokens) * periodMillis - now, untilFull, 0}
  end
  -- store(u + cost, at), then answer for u + cost tokens in use
  local inUse = u + cost
  local fullAt = at + floor((inUse + refillTokens - 1) / refillTokens) * periodMillis
  local untilFullNow, untilNextRefill = 0, 0
  if inUse > 0 then
    untilFullNow = math.max(0, fullAt - now)
    untilNextRefill = at + periodMillis - now
  end
  redis.call('SET', key, format('%d:%d', inUse, at), 'PX', fmt(math.max(1, untilFullNow)))
  return {1, capacity, math.max(0, capacity - inUse), untilNextRefill, untilFullNow, math.max(1, fullAt)}
elseif op == 'p' then
  local left = capacity - u
  if left >= 1 then
    return {1, capacity, left, (u > 0) and (at + periodMillis - now) or 0, untilFull, 0}
  end
  -- rejected(u, at, 1)
  return {0, capacity, (left > 0) and left or 0,
    at + floor((1 - left + refillTokens - 1) / refillTokens) * periodMillis - now, untilFull, 0}
elseif op == 'r' then
  if used ~= nil then
    local left = u - cost
    if receipt ~= nil then
      local untilBack = receipt - at
      if u <= 0 or untilBack <= 0 then
        -- every token the call took is back already
        return {}
      end
      left = u - math.min(cost, floor((untilBack + periodMillis - 1) / periodMillis) * refillTokens, u)
    end
    if left <= 0 then
      redis.call('DEL', key)
    else
      -- store(left, at)
      local untilLeftBack = at + floor((left + refillTokens - 1) / refillTokens) * periodMillis - now
      redis.call('SET', key, format('%d:%d', left, at), 'PX', fmt(math.max(1, untilLeftBack)))
    end
  end
  return {}
elseif op == 'w' then
  -- a reservation takes its tokens now, even those the bucket does not hold yet: the bucket goes
  -- below empty by what the refills up to the call's turn bring, and the turn is when the refills
  -- have paid that debt, within maxWait (a refusal is an acquire's)
  local inUse = u + cost
  local left = capacity - u
  local debtPaid = at + floor((inUse - capacity + refillTokens - 1) / refillTokens) * periodMillis - now
  if inUse > capacity and (inUse > 8388607 or debtPaid > maxWait) then
    return {0, capacity, (left > 0) and left or 0,
      at + floor((cost - left + refillTokens - 1) / refillTokens) * periodMillis - now, untilFull, 0}
  end
  local fullAt = at + floor((inUse + refillTokens - 1) / refillTokens) * periodMillis
  local untilFullNow = math.max(0, fullAt - now)
  redis.call('SET', key, format('%d:%d', inUse, at), 'PX', fmt(math.max(1, untilFullNow)))
  if inUse <= capacity then
    return {1, capacity, capacity - inUse, at + periodMillis - now, untilFullNow, math.max(1, fullAt), 0}
  end
  return {1, capacity, 0, at + floor((inUse + 1 - capacity + refillTokens - 1) / refillTokens) * periodMillis - now,
    untilFullNow, math.max(1, fullAt), math.max(0, debtPaid)}
elseif op == 'c' then
  -- a charge after the call takes its tokens whatever the bucket holds: below empty by at most
  -- maxDebt tokens, which the refills pay back before a call passes
  local inUse = math.max(u, math.min(u + cost, capacity + maxDebt, 8388607))
  if inUse ~= u then
    local untilFullNow = math.max(0, at + floor((inUse + refillTokens - 1) / refillTokens) * periodMillis - now)
    redis.call('SET', key, format('%d:%d', inUse, at), 'PX', fmt(math.max(1, untilFullNow)))
  end
  return {math.max(0, inUse - capacity)}
end
return redis.error_reply('unknown operation ' .. tostring(op))
