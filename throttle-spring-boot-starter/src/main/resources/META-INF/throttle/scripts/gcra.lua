-- GCRA: the twin of GcraPolicy.Transition, function for function.
--
-- State  the theoretical arrival time (TAT) in epoch microseconds; none = a TAT long past
-- P      {limit (n), interval (T/n) in microseconds, tolerance (n * interval) in microseconds}
--
-- trial = max(TAT, now) + cost * interval passes when trial - now <= tolerance, and is stored; a
-- refusal writes nothing, and may retry once the trial would be back within the tolerance. A TAT
-- ahead of now is the algorithm's ordinary state, so a clock that stepped back needs no care.
-- Microseconds since the epoch stay below 2^53 (until about 2255), so Lua's doubles hold them.
local limit, interval, tolerance = P[1], P[2], P[3]
local nowMicros = now * 1000
local tat = raw and tonumber(raw)

-- how far the score runs ahead of now, in microseconds
local ahead = 0
if tat and tat > nowMicros then
  ahead = tat - nowMicros
end

-- whole intervals left within the tolerance; none when the score runs beyond it
local function remaining(aheadMicros)
  return math.max(0, floor((tolerance - aheadMicros) / interval))
end

local function rejected(c)
  return {0, limit, remaining(ahead), ceilDiv(ahead + c * interval - tolerance, 1000), ceilDiv(ahead, 1000)}
end

if op == 'a' then
  local trial = ahead + cost * interval
  if trial > tolerance then
    return rejected(cost)
  end
  redis.call('SET', key, fmt(nowMicros + trial), 'PX', fmt(ceilDiv(trial, 1000)))
  return {1, limit, remaining(trial), 0, ceilDiv(trial, 1000)}
elseif op == 'p' then
  if ahead + interval <= tolerance then
    return {1, limit, remaining(ahead), 0, ceilDiv(ahead, 1000)}
  end
  return rejected(1)
elseif op == 'r' then
  if tat ~= nil then
    local back = tat - cost * interval
    if back <= nowMicros then
      redis.call('DEL', key)
    else
      redis.call('SET', key, fmt(back), 'PX', fmt(ceilDiv(back - nowMicros, 1000)))
    end
  end
  return {}
end
return redis.error_reply('unknown operation ' .. tostring(op))
