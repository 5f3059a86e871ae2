-- A concurrency slot released by its receipt, the way almost every call with a slot ends. It runs
-- ahead of prelude.lua (RedisThrottleScripts puts it there), so that a release costs Redis far less
-- than a decision: no TIME, no helper functions made, one GET and one SET. A slot taken and
-- released is two round trips, and should cost no more than two decisions.
--
-- It does what concurrency.lua does for r with a receipt, without the time: finding a slot needs
-- only the ids, and the key's expiry stays what the newest slot's take set (a release never
-- changes the last id, which is what the expiry counts from), so the SET keeps the TTL. Anything
-- else falls through to the prelude and concurrency.lua: a refund without a receipt, a receipt
-- that is not a number, no state, a state that is not a list of slots, a key without an expiry.
-- One difference, on state only another writer leaves: concurrency.lua also refuses ids stamped
-- beyond its horizon of now (about 17 years ahead), which this cannot tell without the time.
if ARGV[1] == 'r' and ARGV[4] ~= nil and ARGV[4] ~= '' then
  local receipt = tonumber(ARGV[4])
  local state = redis.pcall('GET', KEYS[1])
  if receipt ~= nil and receipt >= 1 and receipt < 2^53 and type(state) == 'string'
      and string.sub(state, 1, 1) == 'C' and #state > 16 and (#state - 1) % 16 == 0 then
    local floor, sub = math.floor, string.sub
    local last = tonumber(sub(state, 2, 17))
    local held = (last ~= nil and last == floor(last) and last >= 1 and last < 2^53)
    local count = (#state - 1) / 16 - 1
    local at = nil
    -- every slot must be an id no later than the last, as concurrency.lua reads the list
    for i = 1, count do
      local s = tonumber(sub(state, 2 + i * 16, 1 + (i + 1) * 16))
      if not held or s == nil or s ~= floor(s) or s < 1 or s > last then
        held = false
        break
      end
      if s == receipt then
        at = i
      end
    end
    if held then
      if at == nil then
        -- no slot has the receipt: freed already, or dropped once its lease ran out
        return {}
      end
      local rest = sub(state, 1, 1 + at * 16) .. sub(state, 2 + (at + 1) * 16)
      if redis.REDIS_VERSION_NUM and redis.REDIS_VERSION_NUM >= 0x060000 then
        redis.call('SET', KEYS[1], rest, 'KEEPTTL')
        return {}
      end
      -- before Redis 7 (no version to test for KEEPTTL): the expiry read and set again
      local ttl = redis.call('PTTL', KEYS[1])
      if ttl > 0 then
        redis.call('SET', KEYS[1], rest, 'PX', ttl)
        return {}
      end
    end
  end
end
