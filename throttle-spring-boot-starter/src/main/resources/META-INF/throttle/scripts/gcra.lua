-- GCRA: the twin of GcraPolicy.Transition, function for function.
--
-- State    "<TAT>:<interval>": the theoretical arrival time (TAT) in epoch microseconds and the
--          emission interval it was written under; none = a TAT long past. A bare "<TAT>" (written
--          before intervals were kept) is a TAT under this policy's interval.
-- P        {limit (n), interval (T/n) in microseconds, tolerance (n * interval) in microseconds}
-- Receipt  the TAT the call stored
--
-- Written under another interval I' (another plan of the policy, numbers changed at run time), what
-- runs ahead of now is ceil(ahead * I / I') under this one: the same number of calls, in doubles as
-- the Java twin computes it, at most the horizon.
-- trial = max(TAT, now) + cost * interval passes when trial - now <= tolerance, and is stored; a
-- refusal writes nothing, and may retry once the trial would be back within the tolerance. A TAT
-- ahead of now is the algorithm's ordinary state, so a clock that stepped back needs no care. With
-- r whole intervals left, the next unit comes once the score is (r + 1) intervals within the
-- tolerance. A call took the span [receipt - cost * interval, receipt] of the score: a refund with
-- its receipt gives back what of that span is still ahead of now, at most what the score runs ahead
-- (not clipped at the TAT, which earlier refunds moved back without moving later receipts).
-- Microseconds since the epoch stay below 2^53 (until about 2255), so Lua's doubles hold them; a
-- score or interval that is not a whole number within range (1e300, inf, nan) is no score.
--
-- The transition's small functions are written out where they are used (prelude.lua says why):
--   remaining(a)     = max(0, floor((tolerance - a) / interval)), whole intervals left within the
--                      tolerance when the score runs a ahead; none when it runs beyond it
--   untilNextUnit(a) = 0 when remaining(a) >= limit (nothing in use), else
--                      ceilDiv(a + (remaining(a) + 1) * interval - tolerance, 1000)
--   rejected(c)      = {0, limit, remaining(ahead), ceilDiv(ahead + c * interval - tolerance, 1000),
--                       ceilDiv(ahead, 1000), 0}
-- with ceilDiv(x, 1000) = floor((x + 999) / 1000), microseconds up to milliseconds.
local limit, interval, tolerance = P[1], P[2], P[3]
local nowMicros = now * 1000
local tat, written = nil, interval
if raw then
  local sep = find(raw, ':', 1, true)
  if sep then
    tat, written = tonumber(sub(raw, 1, sep - 1)), tonumber(sub(raw, sep + 1))
  else
    tat = tonumber(raw)
  end
  -- a score is a whole number of microseconds within the horizon of now, its interval a whole
  -- number from 1 to 2^53
  if not (tat ~= nil and tat == floor(tat) and tat >= nowMicros - HORIZON * 1000 and tat <= nowMicros + HORIZON * 1000
      and written ~= nil and written == floor(written) and written >= 1 and written < 2^53) then
    tat = nil
  end
end

-- how far the score runs ahead of now, in microseconds
local ahead = 0
if tat and tat > nowMicros then
  ahead = tat - nowMicros
  if written ~= interval then
    ahead = math.min(math.ceil(ahead * interval / written), HORIZON * 1000)
  end
  tat = nowMicros + ahead
end

if op == 'a' then
  local trial = ahead + cost * interval
  if trial > tolerance then
    -- rejected(cost)
    local r = floor((tolerance - ahead) / interval)
    return {0, limit, (r > 0) and r or 0, floor((trial - tolerance + 999) / 1000), floor((ahead + 999) / 1000), 0}
  end
  local reset = floor((trial + 999) / 1000)
  redis.call('SET', key, format('%d:%d', nowMicros + trial, interval), 'PX', fmt(reset))
  -- remaining(trial) >= 0 here, as trial <= tolerance
  local r = floor((tolerance - trial) / interval)
  return {1, limit, r, (r >= limit) and 0 or floor((trial + (r + 1) * interval - tolerance + 999) / 1000), reset,
    math.max(1, nowMicros + trial)}
elseif op == 'p' then
  if ahead + interval <= tolerance then
    local r = floor((tolerance - ahead) / interval)
    return {1, limit, r, (r >= limit) and 0 or floor((ahead + (r + 1) * interval - tolerance + 999) / 1000),
      floor((ahead + 999) / 1000), 0}
  end
  -- rejected(1)
  local r = floor((tolerance - ahead) / interval)
  return {0, limit, (r > 0) and r or 0, floor((ahead + interval - tolerance + 999) / 1000), floor((ahead + 999) / 1000), 0}
elseif op == 'r' then
  if tat ~= nil then
    local back = tat - cost * interval
    if receipt ~= nil then
      local stillAhead = math.min(receipt - math.max(receipt - cost * interval, nowMicros), tat - nowMicros)
      if stillAhead <= 0 then
        return {}
      end
      back = tat - stillAhead
    end
    if back <= nowMicros then
      redis.call('DEL', key)
    else
      redis.call('SET', key, format('%d:%d', back, interval), 'PX', fmt(floor((back - nowMicros + 999) / 1000)))
    end
  end
  return {}
elseif op == 'w' then
  -- a reservation moves the score as an acquire does; the call's turn is when its trial score is
  -- back within the tolerance, trial - tolerance after now, and it is let in when that is within
  -- maxWait (a refusal is an acquire's)
  local trial = ahead + cost * interval
  if trial - tolerance > maxWait * 1000 then
    local r = floor((tolerance - ahead) / interval)
    return {0, limit, (r > 0) and r or 0, floor((trial - tolerance + 999) / 1000), floor((ahead + 999) / 1000), 0}
  end
  local reset = floor((trial + 999) / 1000)
  redis.call('SET', key, format('%d:%d', nowMicros + trial, interval), 'PX', fmt(reset))
  local r = floor((tolerance - trial) / interval)
  if r < 0 then
    r = 0
  end
  local turn = 0
  if trial > tolerance then
    turn = floor((trial - tolerance + 999) / 1000)
  end
  return {1, limit, r, (r >= limit) and 0 or floor((trial + (r + 1) * interval - tolerance + 999) / 1000), reset,
    math.max(1, nowMicros + trial), turn}
elseif op == 'c' then
  -- a charge after the call moves the score forward whatever the tolerance: beyond it by at most
  -- maxDebt intervals, which every later call waits for
  local most = math.min(tolerance + maxDebt * interval, HORIZON * 1000)
  local charged = ahead
  if most > ahead then
    charged = math.min(ahead + cost * interval, most)
    redis.call('SET', key, format('%d:%d', nowMicros + charged, interval), 'PX', fmt(floor((charged + 999) / 1000)))
  end
  local beyond = charged - tolerance
  return {(beyond > 0) and floor((beyond + interval - 1) / interval) or 0}
end
return redis.error_reply('unknown operation ' .. tostring(op))
