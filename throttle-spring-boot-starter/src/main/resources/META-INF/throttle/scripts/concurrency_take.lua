-- A concurrency slot taken (or refused), the other half of every call with a slot. It runs ahead of
-- prelude.lua (RedisThrottleScripts puts it there, before concurrency_release.lua), so that a take
-- costs Redis what its commands cost and little more: the TIME it needs (not even that when the
-- caller passes now), one GET, one SET, and none of the helper functions the prelude and
-- concurrency.lua make on every call (prelude.lua says what those cost).
--
-- It does what concurrency.lua does for a, line for line, with the helpers written out where they
-- are used: the same ids, the same slots cleared, the same reply and the same state and expiry.
-- It reads the time only once it has seen a state it can decide on (none, or a list of slots), so
-- that what falls through to the prelude reads the time once: a key of another Redis type, or a
-- state that is not a list of slots (another algorithm's, before a redeploy).
if ARGV[1] == 'a' then
  local state = redis.pcall('GET', KEYS[1])
  if state == false or (type(state) == 'string' and string.sub(state, 1, 1) == 'C' and #state > 16
      and (#state - 1) % 16 == 0) then
    -- as prelude.lua does first: a write after TIME needs effects replication where Redis has a choice
    if redis.replicate_commands and not redis.REDIS_VERSION_NUM then pcall(redis.replicate_commands) end
    local floor, format, sub, max, min = math.floor, string.format, string.sub, math.max, math.min
    local now = tonumber(ARGV[3])
    if not now then
      local time = redis.call('TIME')
      now = time[1] * 1000 + floor(time[2] / 1000)
    end
    local limit, lease, hintMax = P[1], P[2], P[3]
    -- an id is a whole number from 1 to 2^53 whose time is within prelude.lua's horizon of now
    local horizon = now + 549755813888
    local last, n = 0, 0
    if state then
      last = tonumber(sub(state, 2, 17))
      if last ~= nil and last == floor(last) and last >= 1 and last < 2^53 and floor(last / 1000) <= horizon then
        n = (#state - 1) / 16 - 1
      else
        last = 0
      end
    end
    -- the oldest slot still held and the newest (their ids); a list with an id that is not one, or
    -- one later than the last, counts as no slots
    local lowest = (now - lease + 1) * 1000
    local first, oldest, newest = n + 1, nil, nil
    for i = 1, n do
      local s = tonumber(sub(state, 2 + i * 16, 1 + (i + 1) * 16))
      if not (s ~= nil and s == floor(s) and s >= 1 and s < 2^53 and floor(s / 1000) <= horizon and s <= last) then
        first, oldest, newest = 1, nil, nil
        n = 0
        break
      end
      if oldest == nil and s >= lowest then
        first, oldest = i, s
      end
      newest = s
    end
    local live = n - first + 1
    if live + 1 > limit then
      return {0, limit, max(0, limit - live), max(1, min(hintMax, floor(oldest / 1000) + lease - now)),
        floor(newest / 1000) + lease - now, 0}
    end
    local id = max(last + 1, now * 1000 + 1)
    local untilExpiry = floor(id / 1000) + lease - now
    local held = (live > 0) and sub(state, 2 + first * 16) or ''
    redis.call('SET', KEYS[1], 'C' .. format('%016d', id) .. held .. format('%016d', id),
      'PX', format('%d', untilExpiry))
    return {1, limit, max(0, limit - (live + 1)),
      max(1, min(hintMax, floor(((live > 0) and oldest or id) / 1000) + lease - now)), untilExpiry, id}
  end
end
