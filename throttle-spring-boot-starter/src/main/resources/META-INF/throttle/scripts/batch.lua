-- Calls of one policy sent together (the twin of sending them one by one): what follows the
-- algorithm's script when the store sends several acquires and refunds that waited at the same moment
-- in one call. RedisThrottleScripts builds it as
--   local P = {...}                            the policy's numbers
--   local BATCH_KEYS, BATCH_ARGV = KEYS, ARGV
--   local function decideOne(KEYS, ARGV) [concurrency_release.lua] prelude.lua, the algorithm's script end
--   this driver
-- so each call runs the policy's own script, unchanged, in the order the calls were queued, and each
-- sees what the ones before it wrote (several on one key are applied one after the other, as
-- separate calls would be, and atomically per key: nothing runs between them).
--
-- KEYS     the calls' keys, one per call (a key may appear more than once)
-- ARGV     four per call, in the same order, as prelude.lua reads ARGV[1] to ARGV[4]: its operation
--          (a: acquire, r: refund by a receipt), cost, now ("" for the server's TIME, read once per
--          batch), and receipt ("" for an acquire)
-- Reply    six numbers per call in turn: an acquire's (allowed, limit, remaining, wait,
--          resetAfterMillis, receipt); a refund's are six zeros (a single refund replies {})

-- as prelude.lua does first: a write after TIME needs effects replication where Redis has a choice
if redis.replicate_commands and not redis.REDIS_VERSION_NUM then pcall(redis.replicate_commands) end

-- the server's time, read once for the calls that ask for it: they arrived at the same moment, and
-- every TIME read in a script costs Redis a command
local batchNow = nil
local replies = {}
for i = 1, #BATCH_KEYS do
  local at = 4 * i
  local now = BATCH_ARGV[at - 1]
  if now == '' then
    if not batchNow then
      local time = redis.call('TIME')
      batchNow = string.format('%d', time[1] * 1000 + math.floor(time[2] / 1000))
    end
    now = batchNow
  end
  local reply = decideOne({BATCH_KEYS[i]}, {BATCH_ARGV[at - 3], BATCH_ARGV[at - 2], now, BATCH_ARGV[at]})
  for j = 1, 6 do
    replies[#replies + 1] = reply[j] or 0
  end
end
return replies
