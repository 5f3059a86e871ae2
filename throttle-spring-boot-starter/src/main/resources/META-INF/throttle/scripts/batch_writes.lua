-- What a batch's calls see of Redis (batch.lua says how a batch is built): this goes before the
-- policy's function, so that the policy's own script, unchanged, reads and writes through it.
--
-- Several calls of a batch on one key (a hot key: a fleet's one API key, a tenant's burst) would each
-- read the key and write it back: a GET and a SET per call, each a command Redis parses, dispatches
-- and answers. Here a key is read from Redis once per batch; what a call writes is held, seen by the
-- calls after it, and written once, as the last call of the batch left it, when the batch ends. The
-- script is atomic, so nothing can tell the two apart: no other client runs between the calls, and
-- a key's expiry is the last write's, as it would be.
--
-- GET       the key as the batch last wrote it, else as Redis has it (read once, then kept)
-- SET       held: key value PX ms, and key value KEEPTTL (the expiry the key had, or none after a
--           DEL or a SET without one in the same batch); any other SET goes to Redis at once
-- DEL       held when the batch has read the key, so that the reply (1 or 0) is exact; else at once
-- anything else (TIME, PTTL) goes to Redis, after the key's held write if it has one

local server = redis
-- key -> the value the batch's calls see: a string, or false once deleted
local seen = {}
-- key -> its held write: {value, 'PX', ms}, {value, 'KEEPTTL'}, {value} (no expiry), or false (DEL)
local held = {}
-- the keys written, in the order first written, for the end of the batch
local written, writtenCount = {}, 0

local function writeHeld(key)
  local write = held[key]
  if write == nil then
    return
  end
  held[key] = nil
  if write == false then
    server.call('DEL', key)
  elseif write[2] == nil then
    server.call('SET', key, write[1])
  elseif write[3] == nil then
    server.call('SET', key, write[1], write[2])
  else
    server.call('SET', key, write[1], write[2], write[3])
  end
end

local function hold(key, write)
  if held[key] == nil then
    writtenCount = writtenCount + 1
    written[writtenCount] = key
  end
  held[key] = write
end

local OK = {ok = 'OK'}

local function through(call)
  return function(command, ...)
    local key = ...
    if key == nil then
      -- a command of no key (TIME)
      return call(command)
    end
    if command == 'GET' then
      local value = seen[key]
      if value == nil then
        value = call('GET', key)
        -- a key of another type answers an error, which is not kept: each call is told so by Redis
        if type(value) == 'string' or value == false then
          seen[key] = value
        end
      end
      return value
    end
    local n = select('#', ...)
    if command == 'SET' then
      local _, value, option, ms = ...
      if n == 4 and option == 'PX' then
        seen[key] = value
        hold(key, {value, 'PX', ms})
        return OK
      elseif n == 3 and option == 'KEEPTTL' then
        local before = held[key]
        seen[key] = value
        if before == nil then
          hold(key, {value, 'KEEPTTL'})
        elseif before == false then
          hold(key, {value})
        else
          hold(key, {value, before[2], before[3]})
        end
        return OK
      end
    elseif command == 'DEL' and n == 1 and seen[key] ~= nil then
      local existed = seen[key] ~= false
      seen[key] = false
      hold(key, false)
      return existed and 1 or 0
    end
    writeHeld(key)
    seen[key] = nil
    return call(command, ...)
  end
end

local redis = setmetatable({call = through(server.call), pcall = through(server.pcall)}, {__index = server})
