-- What every throttle script starts with. RedisThrottleScripts builds a policy's script once, as
--   local P = {...}      the policy's numbers, as the algorithm's script documents them
--   this prelude
--   the algorithm's script, the Lua twin of its Java transition (dev.throttle.*Policy.Transition)
-- so a call is one EVALSHA that sends only the key and ARGV = op, cost, now (and a receipt):
--
-- KEYS[1]  the key's state
-- ARGV[1]  operation: a (acquire) | r (refund) | p (peek) | w (reserve: acquire, waiting for a turn)
--          | c (charge: a cost known after the call, into debt)
-- ARGV[2]  cost, from 1 to the policy's maxCost (Java refuses higher costs before calling); for c,
--          the units to take, from 1 to 2^31 - 1
-- ARGV[3]  now in epoch milliseconds, or "" to read the Redis server's TIME (tests pass their clock)
-- ARGV[4]  refund only, optional: the receipt of the call being refunded, as its acquire replied it;
--          the refund then gives back exactly what that call took, or nothing once that is gone.
--          Without it, a refund gives back cost units whichever call took them.
-- ARGV[4]  reserve only: the longest the call may wait for its turn, in milliseconds (at least 1;
--          a call that may not wait is an acquire)
-- ARGV[4]  charge only: the most units the key may owe after the charge (its debt bound)
--
-- A script answers a and p with {allowed, limit, remaining, wait, resetAfterMillis, receipt}: wait
-- is a refusal's retry-after, and for an allowed call the time until one unit more than remaining
-- is available (0 when nothing is in use); receipt is what an allowed acquire took, as the
-- algorithm's script documents it (0 for a peek or a refusal). w answers as a does, allowed with a
-- seventh number: how long until the call's turn (0 when it may proceed now); a reservation takes
-- what the call costs for that turn at once, so every later call is decided after it, and one whose
-- turn would come later than ARGV[4] is refused as a would refuse it, writing nothing. Only the
-- algorithms that take a wait answer w. c takes the units whatever the key has left, never refused:
-- what is left goes below nothing, into debt, by at most ARGV[4] units (the units beyond are not
-- taken), and answers {debt}, the units the key owes after it; later calls are refused until the
-- algorithm's refills pay the debt back. Only the algorithms that carry a debt answer c. r answers {}. A refusal writes
-- nothing; every write sets PX to the time until the key's state is neutral again, so Redis forgets
-- it when nothing would change by keeping it.
--
-- Try one on its own (bash; here a bucket of 10 tokens, 1 more per 2 s, on the server's clock):
--   redis-cli --eval <(echo 'local P = {10, 1, 2000}'; cat prelude.lua token_bucket.lua) tb:alice , a 1 ''
--
-- State a script cannot read (written by another algorithm, or under other settings of the policy
-- before a redeploy: another type, another shape, numbers out of range, inf or nan) counts as
-- neutral or is clamped into range, never an error: one stale key must not put the store into
-- failure mode. A time is read only within 2^39 ms (about 17 years) of now, as the memory store
-- reads its packed times; further off, it is no state. State stamped after now (Redis time stepped
-- back) is kept, as the Java twin keeps it: taking it for no state would hand every key used in the
-- last moments a fresh quota.

-- What it costs: Redis runs this text on every call (EVALSHA runs the compiled chunk; nothing
-- survives from one call to the next), so every function defined here or in an algorithm's script
-- is made again on every call, and a function that reads a local of the chunk (an upvalue) costs
-- one more object per such local, made and closed per call (a dozen small helpers make a refused
-- call take half again as long in Redis, measured by benchmarks/script-cost.sh). So the
-- helpers several scripts share (fmt, countAndTime) read nothing but their arguments and the
-- libraries, the algorithms write their arithmetic out where it is used rather than in small
-- functions, and library functions used more than once are read into locals once.

-- Where Redis replicates a script by its text (3.2 to 4 by default, 5 and 6 with
-- lua-replicate-commands no) it refuses a write after TIME unless the script asks for its effects
-- to be replicated instead. Redis 7, the first to tell its version to scripts, replicates only
-- effects: there the call would be a no-op, so it is not made.
if redis.replicate_commands and not redis.REDIS_VERSION_NUM then pcall(redis.replicate_commands) end

local floor, format, find, sub = math.floor, string.format, string.find, string.sub

local key = KEYS[1]
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if not now then
  -- TIME answers seconds and microseconds as strings; Lua's arithmetic reads them as numbers
  local time = redis.call('TIME')
  now = time[1] * 1000 + floor(time[2] / 1000)
end

-- the receipt of the call a refund undoes, or nil for a refund of whichever call; one that cannot
-- be read (no script replies a number out of 1 to 2^53) is 0, which names no call: nothing is given
local receipt = nil
if op == 'r' and ARGV[4] ~= nil and ARGV[4] ~= '' then
  receipt = tonumber(ARGV[4])
  if not (receipt ~= nil and receipt >= 1 and receipt < 2^53) then
    receipt = 0
  end
end

-- the longest a reservation may wait for its turn, in milliseconds
local maxWait = 0
if op == 'w' then
  maxWait = tonumber(ARGV[4]) or 0
end

-- the most units a charge may leave the key owing
local maxDebt = 0
if op == 'c' then
  maxDebt = tonumber(ARGV[4]) or 0
end

-- the key's state as stored, nil when there is none; a key of another Redis type is none too
local raw = redis.pcall('GET', key)
if type(raw) ~= 'string' then
  raw = nil
end

-- Every number here is an integer below 2^53, where Lua's doubles are exact and a quotient never
-- rounds across an integer: floor(a / b) is floor division, as Java's / is on non-negative longs,
-- and floor((a + b - 1) / b) is Math.ceilDiv(a, b) (written out where used: see above).

-- an integer as digits, never in exponent notation (as Lua's tostring would write 1e+15)
local function fmt(n)
  return string.format('%d', n)
end

-- How far from now a stored time may be and still be read: 2^39 ms, about 17 years. A time t can
-- be read now when it is a whole number within the horizon of now (not nil, inf, -inf, nan, 1e300):
--   t ~= nil and t == floor(t) and t >= now - HORIZON and t <= now + HORIZON
local HORIZON = 549755813888

-- a state "<count>:<time>" read at now (pass raw and now) as its two numbers, or nil when it is not
-- one (or a number is out of range: the count from 0 to 2^53, the time within HORIZON of now,
-- written out as a number here so that the function reads no local of the chunk)
local function countAndTime(raw, now)
  local sep = raw and string.find(raw, ':', 1, true)
  if not sep then
    return nil
  end
  local count, time = tonumber(string.sub(raw, 1, sep - 1)), tonumber(string.sub(raw, sep + 1))
  if not (count ~= nil and count == math.floor(count) and count >= 0 and count < 2^53 and time ~= nil
      and time == math.floor(time) and time >= now - 549755813888 and time <= now + 549755813888) then
    return nil
  end
  return count, time
end
