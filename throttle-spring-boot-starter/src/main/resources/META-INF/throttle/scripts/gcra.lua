-- GCRA: the twin of GcraPolicy.Transition, function for function.
--
-- State    the theoretical arrival time (TAT) in epoch microseconds; none = a TAT long past
-- P        {limit (n), interval (T/n) in microseconds, tolerance (n * interval) in microseconds}
-- Receipt  the TAT the call stored
--
-- trial = max(TAT, now) + cost * interval passes when trial - now <= tolerance, and is stored; a
-- refusal writes nothing, and may retry once the trial would be back within the tolerance. A TAT
-- ahead of now is the algorithm's ordinary state, so a clock that stepped back needs no care. With
-- r whole intervals left, the next unit comes once the score is (r + 1) intervals within the
-- tolerance. A call took the span [receipt - cost * interval, receipt] of the score: a refund with
-- its receipt gives back what of that span is still ahead of now and not past the TAT.
-- Microseconds since the epoch stay below 2^53 (until about 2255), so Lua's doubles hold them; a
-- score that is not a whole number of microseconds within the horizon of now (1e300, inf, nan) is
-- no score.
local limit, interval, tolerance = P[1], P[2], P[3]
local nowMicros = now * 1000
local tat = raw and tonumber(raw)
if not near(tat, nowMicros, HORIZON * 1000) then
  tat = nil
end

-- how far the score runs ahead of now, in microseconds
local ahead = 0
if tat and tat > nowMicros then
  ahead = tat - nowMicros
end

-- whole intervals left within the tolerance; none when the score runs beyond it
local function remaining(aheadMicros)
  return math.max(0, floor((tolerance - aheadMicros) / interval))
end

-- milliseconds until one interval more than remaining fits; 0 when nothing is in use
local function untilNextUnit(aheadMicros)
  local r = remaining(aheadMicros)
  if r >= limit then
    return 0
  end
  return ceilDiv(aheadMicros + (r + 1) * interval - tolerance, 1000)
end

local function rejected(c)
  return {0, limit, remaining(ahead), ceilDiv(ahead + c * interval - tolerance, 1000), ceilDiv(ahead, 1000), 0}
end

if op == 'a' then
  local trial = ahead + cost * interval
  if trial > tolerance then
    return rejected(cost)
  end
  redis.call('SET', key, fmt(nowMicros + trial), 'PX', fmt(ceilDiv(trial, 1000)))
  return {1, limit, remaining(trial), untilNextUnit(trial), ceilDiv(trial, 1000), math.max(1, nowMicros + trial)}
elseif op == 'p' then
  if ahead + interval <= tolerance then
    return {1, limit, remaining(ahead), untilNextUnit(ahead), ceilDiv(ahead, 1000), 0}
  end
  return rejected(1)
elseif op == 'r' then
  if tat ~= nil then
    local back = tat - cost * interval
    if receipt ~= nil then
      local stillAhead = math.min(receipt, tat) - math.max(receipt - cost * interval, nowMicros)
      if stillAhead <= 0 then
        return {}
      end
      back = tat - stillAhead
    end
    if back <= nowMicros then
      redis.call('DEL', key)
    else
      redis.call('SET', key, fmt(back), 'PX', fmt(ceilDiv(back - nowMicros, 1000)))
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
