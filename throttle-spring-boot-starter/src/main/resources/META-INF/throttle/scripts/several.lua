-- Several limits in one policy (the twin of dev.throttle.memory.SeveralTransition): what follows
-- the algorithm's own script when a policy has several limits. RedisThrottleScripts builds it as
--   local P = {}                  set to each limit's numbers in turn
--   local LIMITS = {{...}, ...}   each limit's numbers, as the algorithm's script documents P
--   prelude.lua
--   local function decideLimit(redis) <the algorithm's script> end
--   this driver
-- so a decision is still one EVALSHA. The algorithm's script runs once per limit over that limit's
-- part of the state, with its writes caught instead of made: a call is allowed only when every
-- limit allows it, and only then are the parts written, together, in one SET; a refusal by one
-- limit writes nothing (no partial charge is ever observable).
--
-- State    the limits' states in order, joined by "|" ("2:1700000000000|9:1700000000000"); an empty
--          part, or a missing one (a state written under fewer limits), is no state for that limit.
-- ARGV[4]  refund only, optional: the receipts of the refunded call, one per limit, joined by ","
--          (as its acquire replied them); a 0 refunds that limit without one.
-- Reply    a and p: the six numbers of each limit in turn (allowed, limit, remaining, wait,
--          resetAfterMillis, receipt); on a refusal, the limits that would allow the call answer
--          as a peek. r: {}. c: {the largest debt of a limit}; every limit takes the units.
local whole = raw
local parts = {}
if whole then
  local from = 1
  while true do
    local bar = string.find(whole, '|', from, true)
    parts[#parts + 1] = string.sub(whole, from, (bar or 0) - 1)
    if not bar then
      break
    end
    from = bar + 1
  end
end

local receipts = {}
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  for r in string.gmatch(ARGV[4], '[^,]+') do
    receipts[#receipts + 1] = tonumber(r)
  end
end

-- what the limit's script wrote: nil (nothing), false (DEL) or {state, px}
local written
local caught = {
  call = function(command, _, value, _, px)
    if command == 'SET' then
      written = {value, tonumber(px)}
    elseif command == 'DEL' then
      written = false
    end
  end,
  error_reply = redis.error_reply
}

-- runs limit i's script under operation o; returns its reply and what it wrote
local function run(i, o)
  P = LIMITS[i]
  raw = parts[i]
  if raw == '' then
    raw = nil
  end
  op = o
  if o == 'r' and #receipts > 0 then
    local r = receipts[i]
    if #receipts ~= #LIMITS or r == 0 then
      -- receipts of other limits than these (a plan with another number of limits), or none for it
      receipt = nil
    elseif r ~= nil and r >= 1 and r < 2^53 then
      receipt = r
    else
      receipt = 0
    end
  end
  written = nil
  local reply = decideLimit(caught)
  return reply, written
end

local asked = op
local replies, writes = {}, {}
local allowed = true
for i = 1, #LIMITS do
  replies[i], writes[i] = run(i, asked)
  if replies[i].err then
    return replies[i]
  end
  if asked == 'a' and replies[i][1] == 0 then
    allowed = false
  end
end

if asked == 'a' and not allowed then
  -- nothing is written; the limits that would allow the call say what they hold, uncharged
  for i = 1, #LIMITS do
    if replies[i][1] == 1 then
      replies[i] = run(i, 'p')
    end
  end
elseif asked == 'a' or asked == 'r' or asked == 'c' then
  local states, px, kept = {}, 0, false
  for i = 1, #LIMITS do
    local w = writes[i]
    if w == nil then
      states[i] = parts[i] or ''
      kept = kept or states[i] ~= ''
    elseif w == false then
      states[i] = ''
    else
      states[i] = w[1]
      px = math.max(px, w[2])
    end
  end
  if kept then
    -- a part left as it was lives as long as the key does now
    px = math.max(px, redis.call('PTTL', key))
  end
  local state = table.concat(states, '|')
  if string.find(state, '[^|]') == nil then
    redis.call('DEL', key)
  elseif px > 0 then
    redis.call('SET', key, state, 'PX', fmt(px))
  end
end

if asked == 'r' then
  return {}
end
if asked == 'c' then
  -- the largest debt of a limit
  local debt = 0
  for i = 1, #LIMITS do
    debt = math.max(debt, replies[i][1])
  end
  return {debt}
end
local reply = {}
for i = 1, #LIMITS do
  for _, number in ipairs(replies[i]) do
    reply[#reply + 1] = number
  end
end
return reply
