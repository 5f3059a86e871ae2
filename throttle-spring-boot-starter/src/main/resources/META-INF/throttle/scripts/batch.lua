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
--          (a: acquire, r: refund by a receipt), cost, now ("" for the server's TIME), and receipt
--          ("" for an acquire)
-- Reply    six numbers per call in turn: an acquire's (allowed, limit, remaining, wait,
--          resetAfterMillis, receipt); a refund's are six zeros (a single refund replies {})
local replies = {}
for i = 1, #BATCH_KEYS do
  local at = 4 * i
  local reply = decideOne({BATCH_KEYS[i]}, {BATCH_ARGV[at - 3], BATCH_ARGV[at - 2], BATCH_ARGV[at - 1], BATCH_ARGV[at]})
  for j = 1, 6 do
    replies[#replies + 1] = reply[j] or 0
  end
end
return replies
