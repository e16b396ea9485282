"""`TAKE`: the script that leases a batch of a topic's messages (layout and lease tokens: `_queue_lua.py`).

It first moves due delayed messages to their lanes and, on a sweeping take, claims the leases of dead
consumers and those idle past the visibility timeout; then it reads the lanes highest first.
"""

from __future__ import annotations

from ._queue_lua import PRELUDE

__all__ = ("TAKE",)

TAKE = (
    PRELUDE
    + """
-- ARGV: P, group, consumer, n, sweep (0/1), visibility ms, scan limit, liveness ms
-- Returns {entries (token . body)..., again, more, due in ms (-1: none), busy, bell id}
local group, consumer = ARGV[2], ARGV[3]
local n, sweep, vt, limit = tonumber(ARGV[4]), ARGV[5] == '1', ARGV[6], tonumber(ARGV[7])
local now = now_ms()
redis.call('ZADD', P .. 'alive', now + tonumber(ARGV[8]), consumer)
local out, got, rung, more, scanned = {}, 0, 0, 0, 0
local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then
      return fields[i + 1]
    end
  end
  return false
end
local function emit(lane, id, count, fields)
  local key, env = field(fields, 'k'), field(fields, 'e')
  local head = lane .. string.format('%08x', count) .. (key and 'k' or '-')
  head = head .. string.format('%02x%08x', #id, key and #key or 0) .. id .. (key or '')
  out[#out + 1] = head .. (env and ('e' .. env) or ('g' .. cmsgpack.pack(fields)))
  got = got + 1
end
local function gone(ref)
  local id = string.sub(ref, 17)
  return #redis.call('XRANGE', P .. 'q:' .. string.sub(ref, 1, 16), id, id) == 0
end
local function claimed(lane, s, e)
  if type(e) == 'table' and type(e[2]) == 'table' then
    local key = field(e[2], 'k')
    if key and not redis.call('HGET', P .. 'keys', key) then
      redis.call('HSET', P .. 'keys', key, lane .. e[1])
    end
    emit(lane, e[1], redis.call('XPENDING', s, group, e[1], e[1], 1)[1][4], e[2])
  end
end
local function pending_of(s, who, count)
  local p = redis.pcall('XPENDING', s, group, '-', '+', count, who)
  if type(p) == 'table' and p.err == nil then
    return p
  end
  return {}
end

for _, m in ipairs(redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now, 'LIMIT', 0, limit)) do
  local r = cmsgpack.unpack(string.sub(m, 17))
  redis.call('ZADD', P .. 'lanes', 'NX', 0, r[1])
  add(r[1], r[3], r[2])
  redis.call('ZREM', P .. 'delayed', m)
  rung = rung + 1
end
local lanes = redis.call('ZREVRANGE', P .. 'lanes', 0, -1)

if sweep then
  -- consumers whose heartbeat lapsed: claim their leases now, then drop them once they hold none
  for _, dead in ipairs(redis.call('ZRANGEBYSCORE', P .. 'alive', '-inf', now, 'LIMIT', 0, 8)) do
    local left = false
    for _, lane in ipairs(lanes) do
      local s = P .. 'q:' .. lane
      if got < n then
        local ids = {}
        for i, e in ipairs(pending_of(s, dead, n - got)) do
          ids[i] = e[1]
        end
        if #ids > 0 then
          for _, e in ipairs(redis.call('XCLAIM', s, group, consumer, 0, unpack(ids))) do
            claimed(lane, s, e)
          end
        end
      end
      left = left or #pending_of(s, dead, 1) > 0
    end
    if left then
      more = 1
    else
      for _, lane in ipairs(lanes) do
        redis.pcall('XGROUP', 'DELCONSUMER', P .. 'q:' .. lane, group, dead)
      end
      redis.call('ZREM', P .. 'alive', dead)
    end
  end
  for _, lane in ipairs(lanes) do
    if got >= n then
      more = 1
      break
    end
    local s = P .. 'q:' .. lane
    local at = lane .. group
    local r = redis.pcall('XAUTOCLAIM', s, group, consumer, vt,
      redis.call('HGET', P .. 'cursors', at) or '0-0', 'COUNT', n - got)
    if type(r) == 'table' and r.err == nil then
      if r[1] ~= '0-0' then
        more = 1
      end
      redis.call('HSET', P .. 'cursors', at, r[1])
      for _, e in ipairs(r[2]) do
        claimed(lane, s, e)
      end
    end
  end
end

for _, lane in ipairs(lanes) do
  if got >= n or scanned >= limit then
    break
  end
  local s = P .. 'q:' .. lane
  while got < n and scanned < limit do
    local want = n - got
    local r = redis.pcall('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want, 'STREAMS', s, '>')
    if type(r) == 'table' and r.err then
      redis.call('XGROUP', 'CREATE', s, group, '0', 'MKSTREAM')
      r = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want, 'STREAMS', s, '>')
    end
    if not r then
      break
    end
    local entries = r[1][2]
    for _, e in ipairs(entries) do
      scanned = scanned + 1
      local id, fields = e[1], e[2]
      local key, env = field(fields, 'k'), field(fields, 'e')
      if key and env then
        local ref = lane .. id
        local owner = redis.call('HGET', P .. 'keys', key)
        if owner and owner ~= ref and gone(owner) then
          rung = rung + release(key, owner)
          owner = redis.call('HGET', P .. 'keys', key)
        end
        if owner and owner ~= ref then
          redis.call('RPUSH', P .. 'held:' .. key, lane .. env)
          redis.call('INCR', P .. 'held')
          redis.call('XACK', s, group, id)
          redis.call('XDEL', s, id)
        else
          if not owner then
            redis.call('HSET', P .. 'keys', key, ref)
          end
          emit(lane, id, 1, fields)
        end
      else
        emit(lane, id, 1, fields)
      end
    end
    if #entries < want then
      break
    end
  end
end

if rung > 0 then
  ring(rung)
end
local again, due, busy, bell = 0, -1, 0, '0-0'
if got < n then
  if scanned >= limit then
    again = 1
  end
  local first = redis.call('ZRANGE', P .. 'delayed', 0, 0, 'WITHSCORES')
  if first[2] then
    due = math.max(tonumber(first[2]) - now, 0)
  end
  for _, lane in ipairs(lanes) do
    if redis.call('XLEN', P .. 'q:' .. lane) > 0 then
      busy = 1
      break
    end
  end
  local last = redis.call('XREVRANGE', P .. 'bell', '+', '-', 'COUNT', 1)
  if last[1] then
    bell = last[1][1]
  end
end
return {out, again, more, due, busy, bell}
"""
)
