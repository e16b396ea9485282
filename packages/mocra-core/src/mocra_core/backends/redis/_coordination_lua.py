"""The Lua scripts of `RedisCoordination`: each call is one script, so Redis runs it atomically."""

__all__ = (
    "ACQUIRE",
    "APPEND",
    "COMPARE_AND_SET",
    "INCR",
    "ITEMS",
    "PRELUDE",
    "RELEASE",
    "RENEW",
    "SET",
    "SET_IF_ABSENT",
)

# state(k, now): 'absent' (missing or expired), 'value' (a hash {v, e?}) or 'list' (a Redis list).
# put(k, v, e, px): replace k by the value v, with logical expiry e ('' = never) and backstop px ms.
# The value scripts below are registered with this prelude in front.
PRELUDE = """
local function state(k, now)
  local t = redis.call('TYPE', k)['ok']
  if t == 'hash' then
    local e = redis.call('HGET', k, 'e')
    if e and tonumber(e) <= now then return 'absent' end
    return 'value'
  elseif t == 'none' then return 'absent' end
  return 'list'
end
local function put(k, v, e, px)
  redis.call('DEL', k)
  if e == '' then redis.call('HSET', k, 'v', v) else redis.call('HSET', k, 'v', v, 'e', e) end
  if px ~= '0' then redis.call('PEXPIRE', k, px) end
end
"""
SET = "put(KEYS[1], ARGV[1], ARGV[2], ARGV[3])"
SET_IF_ABSENT = """
if state(KEYS[1], tonumber(ARGV[1])) ~= 'absent' then return 0 end
put(KEYS[1], ARGV[2], ARGV[3], ARGV[4])
return 1
"""
# ARGV: now, has_expected ('1'/'0'), expected, mode ('put', 'keep': keep the expiry, 'del'), value, e, px
COMPARE_AND_SET = """
local k = KEYS[1]
local s = state(k, tonumber(ARGV[1]))
if s == 'list' then return -1 end
local cur = false
if s == 'value' then cur = redis.call('HGET', k, 'v') end
if ARGV[2] == '1' then
  if cur ~= ARGV[3] then return 0 end
elseif cur then return 0 end
if ARGV[4] == 'del' then redis.call('DEL', k)
elseif ARGV[4] == 'keep' and s == 'value' then redis.call('HSET', k, 'v', ARGV[5])
else put(k, ARGV[5], ARGV[6], ARGV[7]) end
return 1
"""
# HINCRBY checks the format and the 64-bit range; on an error the value goes back for Python to judge.
INCR = """
local k = KEYS[1]
local s = state(k, tonumber(ARGV[1]))
if s == 'list' then return {-1} end
if s == 'absent' then redis.call('DEL', k) end
local r = redis.pcall('HINCRBY', k, 'v', ARGV[2])
if type(r) == 'table' and r.err then return {0, redis.call('HGET', k, 'v')} end
return {1, redis.call('HGET', k, 'v')}
"""
APPEND = """
local s = state(KEYS[1], tonumber(ARGV[1]))
if s == 'value' then return -1 end
if s == 'absent' then redis.call('DEL', KEYS[1]) end
return redis.call('RPUSH', KEYS[1], ARGV[2])
"""
ITEMS = """
local s = state(KEYS[1], tonumber(ARGV[1]))
if s == 'value' then return -1 end
if s == 'absent' then return {} end
return redis.call('LRANGE', KEYS[1], 0, -1)
"""
# A lock is a hash {h: holder, t: token, e: expiry}; KEYS[2] is the namespace's fencing counter.
ACQUIRE = """
local g = redis.call('HMGET', KEYS[1], 'h', 'e')
if g[1] and tonumber(g[2]) > tonumber(ARGV[1]) and g[1] ~= ARGV[3] then return false end
local t = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'h', ARGV[3], 't', t, 'e', ARGV[2])
return t
"""
RENEW = """
local g = redis.call('HMGET', KEYS[1], 'h', 't')
if g[1] ~= ARGV[1] or g[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'e', ARGV[3])
return 1
"""
RELEASE = """
local g = redis.call('HMGET', KEYS[1], 'h', 't')
if g[1] ~= ARGV[1] or g[2] ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""
