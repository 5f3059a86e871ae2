-- Decisions of one policy sent together (the twin of sending them one by one): what follows the
-- algorithm's script when the store sends several acquires that waited at the same moment in one
-- call. RedisThrottleScripts builds it as
--   local P = {...}                            the policy's numbers
--   local BATCH_KEYS, BATCH_ARGV = KEYS, ARGV
--   local function decideOne(KEYS, ARGV) prelude.lua, the algorithm's script end
--   this driver
-- so each decision runs the policy's own script, unchanged, in the order the calls were queued, and
-- each sees what the ones before it wrote (several on one key are applied one after the other, as
-- separate calls would be, and atomically per key: nothing runs between them).
--
-- KEYS     the decisions' keys, one per decision (a key may appear more than once)
-- ARGV     two per decision, in the same order: its cost, its now ("" for the server's TIME)
-- Reply    the six numbers of each decision in turn (allowed, limit, remaining, wait,
--          resetAfterMillis, receipt), as a single acquire replies them
local replies = {}
for i = 1, #BATCH_KEYS do
  local reply = decideOne({BATCH_KEYS[i]}, {'a', BATCH_ARGV[2 * i - 1], BATCH_ARGV[2 * i]})
  for j = 1, 6 do
    replies[#replies + 1] = reply[j]
  end
end
return replies
