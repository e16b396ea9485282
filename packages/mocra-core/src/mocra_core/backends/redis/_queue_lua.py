r"""The Lua scripts behind `RedisStreamsQueue`: every state change of a message is one atomic script.

`TAKE`, the longest, is in `_queue_lua_take.py`.

Keys of one topic share the prefix `P = "{namespace}:{" + topic + "}:"` (the braces make it a Redis
Cluster hash tag, so all keys of a topic would live in one slot). `L` is a lane: the priority shifted to
an unsigned 64-bit number in 16 hex digits, so lanes sort by priority as strings.

```
P lanes          ZSET  L (score 0; ZREVRANGE = highest priority first)
P q: L           STREAM  one entry per ready or leased message: e=<Envelope>, k=<partition key>
                   consumer group = the consuming stage's group; the PEL holds the leases
P delayed        ZSET  score = due time (server ms), member = seq(16 hex) + cmsgpack{L, key|false, env}
P keys           HASH  partition key -> L + entry id of the message that owns the key (leased or next)
P held: key      LIST  L + env of messages waiting for their key, oldest first
P held           STRING  how many messages all `held:` lists hold (for `pending`)
P dseq           STRING  counter that orders delayed messages with the same due time
P cursors        HASH  L + group -> where the next XAUTOCLAIM of that lane starts
P dlq            STREAM  e=<Envelope with reason and failed_at>, oldest first
P bell           STREAM  n=<messages that became ready>; waiting consumers block on it (XREAD)
P alive          ZSET  consumer -> until when (server ms) its heartbeat says it lives
```

Liveness: every consumer refreshes its score in `alive` (on each take, and from its queue's lease keeper
every `liveness_timeout / 5`). A sweeping take claims at once every pending entry of a consumer whose
score has passed (XPENDING of that consumer, XCLAIM with min idle 0: its delivery count goes up as for
an expired lease), then drops that consumer. A consumer not in `alive` (not yet beating) is only swept
by idle time (XAUTOCLAIM after the visibility timeout), like any lease a live consumer keeps too long.

A lease is the PEL entry of a stream entry: its owner (consumer) and delivery count. A delivery is
current while the PEL still has its entry with the same owner and count; an ack, nack or dead-letter
of anything else is stale and does nothing. A take returns each leased entry as one string, a *lease
token* followed by the body, and ack/nack/dead-letter pass the token back (one argument per delivery,
so that the client parses and packs as little as it can):

```
token = L (16) . count (8 hex) . 'k' or '-' (has key) . #id (2 hex) . #key (8 hex) . id . key
body  = 'e' . envelope  |  'g' . cmsgpack(fields)  (an entry without an envelope: garbage)
```
"""

from __future__ import annotations

__all__ = ("ACK", "BEAT", "END", "FORGET", "PENDING", "PRELUDE", "PUBLISH", "REPLAY")

PRELUDE = """
local P = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ring(n)
  redis.call('XADD', P .. 'bell', 'MAXLEN', '~', 64, '*', 'n', n)
end
local function add(lane, env, key)
  if key then
    return redis.call('XADD', P .. 'q:' .. lane, '*', 'e', env, 'k', key)
  end
  return redis.call('XADD', P .. 'q:' .. lane, '*', 'e', env)
end
local function delay(due, lane, key, env)
  local seq = redis.call('INCR', P .. 'dseq')
  redis.call('ZADD', P .. 'delayed', due, string.format('%016x', seq) .. cmsgpack.pack({lane, key, env}))
end
-- The lease `ref` of `key` ended: the key's oldest held message becomes its owner and goes back to its
-- lane (returns 1), or the key is free (returns 0).
local function release(key, ref)
  if redis.call('HGET', P .. 'keys', key) ~= ref then
    return 0
  end
  local rec = redis.call('LPOP', P .. 'held:' .. key)
  if rec then
    redis.call('DECR', P .. 'held')
    local lane = string.sub(rec, 1, 16)
    redis.call('HSET', P .. 'keys', key, lane .. add(lane, string.sub(rec, 17), key))
    return 1
  end
  redis.call('HDEL', P .. 'keys', key)
  return 0
end
local function owned(stream, group, consumer, id, count)
  local p = redis.pcall('XPENDING', stream, group, id, id, 1, consumer)
  return type(p) == 'table' and p.err == nil and p[1] ~= nil and p[1][4] == count
end
-- lane, entry id, delivery count, key (or false) of a lease token
local function lease(token)
  local n = tonumber(string.sub(token, 26, 27), 16)
  local key = string.sub(token, 25, 25) == 'k' and string.sub(token, 36 + n)
  return string.sub(token, 1, 16), string.sub(token, 36, 35 + n), tonumber(string.sub(token, 17, 24), 16), key
end
"""

PUBLISH = (
    PRELUDE
    + """
-- ARGV: P, then per publish: lane, delay ms (0: none), has key (0/1), key, count, envelopes...
local i, ready, delayed, now = 2, 0, false, nil
while i <= #ARGV do
  local lane, ms, count = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 4])
  local key = ARGV[i + 2] == '1' and ARGV[i + 3]
  redis.call('ZADD', P .. 'lanes', 'NX', 0, lane)
  if ms > 0 then
    now = now or now_ms()
    for j = i + 5, i + 4 + count do
      delay(now + ms, lane, key, ARGV[j])
    end
    delayed = true
  else
    for j = i + 5, i + 4 + count do
      add(lane, ARGV[j], key)
    end
    ready = ready + count
  end
  i = i + 5 + count
end
if ready > 0 or delayed then
  ring(ready)
end
return ready
"""
)

ACK = (
    PRELUDE
    + """
-- ARGV: P, group, consumer, lease tokens...
local group, consumer = ARGV[2], ARGV[3]
local rung = 0
for i = 4, #ARGV do
  local lane, id, count, key = lease(ARGV[i])
  local s = P .. 'q:' .. lane
  if owned(s, group, consumer, id, count) then
    redis.call('XACK', s, group, id)
    redis.call('XDEL', s, id)
    if key then
      rung = rung + release(key, lane .. id)
    end
  end
end
if rung > 0 then
  ring(rung)
end
return rung
"""
)

END = (
    PRELUDE
    + """
-- ARGV: P, group, consumer, lease token, mode, delay ms, envelope
-- mode 'now': back to the tail of its lane (keeps its key); 'later': delayed; 'dead': to the DLQ.
local group, consumer = ARGV[2], ARGV[3]
local lane, id, count, key = lease(ARGV[4])
local s = P .. 'q:' .. lane
if not owned(s, group, consumer, id, count) then
  return 0
end
redis.call('XACK', s, group, id)
redis.call('XDEL', s, id)
local ref = lane .. id
local mode, env = ARGV[5], ARGV[7]
if mode == 'now' then
  local new = add(lane, env, key)
  if key and redis.call('HGET', P .. 'keys', key) == ref then
    redis.call('HSET', P .. 'keys', key, lane .. new)
  end
  ring(1)
  return 1
end
if mode == 'later' then
  delay(now_ms() + tonumber(ARGV[6]), lane, key, env)
else
  redis.call('XADD', P .. 'dlq', '*', 'e', env)
end
local rung = 0
if key then
  rung = release(key, ref)
end
if rung > 0 or mode == 'later' then
  ring(rung)
end
return 1
"""
)

REPLAY = (
    PRELUDE
    + """
-- ARGV: P, then per message: DLQ entry id, lane, has key (0/1), key, envelope
local moved = 0
for i = 2, #ARGV, 5 do
  if redis.call('XDEL', P .. 'dlq', ARGV[i]) == 1 then
    redis.call('ZADD', P .. 'lanes', 'NX', 0, ARGV[i + 1])
    add(ARGV[i + 1], ARGV[i + 4], ARGV[i + 2] == '1' and ARGV[i + 3])
    moved = moved + 1
  end
end
if moved > 0 then
  ring(moved)
end
return moved
"""
)

PENDING = """
-- ARGV: P.  Ready and leased (stream entries), delayed and held messages.
local P = ARGV[1]
local total = redis.call('ZCARD', P .. 'delayed') + tonumber(redis.call('GET', P .. 'held') or '0')
for _, lane in ipairs(redis.call('ZRANGE', P .. 'lanes', 0, -1)) do
  total = total + redis.call('XLEN', P .. 'q:' .. lane)
end
return total
"""

FORGET = """
-- ARGV: P, group, consumer, idle ms.  Drops this consumer, and consumers idle that long, from the
-- topic's consumer groups if they hold no lease (a consumer is created per process and lane). This
-- consumer leaves `alive`, or, if it still holds leases, is marked dead there so they are claimed now.
local P, group, me, idle = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local dropped, holding = 0, false
for _, lane in ipairs(redis.call('ZRANGE', P .. 'lanes', 0, -1)) do
  local s = P .. 'q:' .. lane
  local consumers = redis.pcall('XINFO', 'CONSUMERS', s, group)
  if type(consumers) == 'table' and consumers.err == nil then
    for _, c in ipairs(consumers) do
      local info = {}
      for i = 1, #c - 1, 2 do
        info[c[i]] = c[i + 1]
      end
      if info['pending'] == 0 and (info['name'] == me or info['idle'] > idle) then
        redis.call('XGROUP', 'DELCONSUMER', s, group, info['name'])
        dropped = dropped + 1
      elseif info['name'] == me then
        holding = true
      end
    end
  end
end
if holding then
  redis.call('ZADD', P .. 'alive', 0, me)
else
  redis.call('ZREM', P .. 'alive', me)
end
return dropped
"""

BEAT = """
-- ARGV: consumer, liveness ms, topic prefixes...  The consumer lives for liveness ms more (server clock).
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
for i = 3, #ARGV do
  redis.call('ZADD', ARGV[i] .. 'alive', until_ms, ARGV[1])
end
return #ARGV - 2
"""
