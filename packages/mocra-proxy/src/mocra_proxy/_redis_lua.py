"""The Lua scripts `RedisState` saves with: `merge_health` and `merge_tier` run atomically inside Redis.

Numbers travel as the strings Python wrote (`repr` of floats) and are written back as those strings,
never re-formatted by Lua (whose `tostring` keeps 14 digits), so a saved record loads back exactly.
"""

from __future__ import annotations

__all__ = ("HEALTH_FIELDS", "MERGE_HEALTH", "MERGE_TIER")

HEALTH_FIELDS = (
    "successes",
    "failures",
    "consecutive_errors",
    "cooldowns",
    "cooldown_until",
    "latency",
    "last_used",
    "evicted",
)

# KEYS[1] the proxy's hash; ARGV[1] TTL in ms (0: none, and none left);
# ARGV[2..9] the incoming record (HEALTH_FIELDS).
MERGE_HEALTH = """
local key, ttl = KEYS[1], tonumber(ARGV[1])
local names = {'successes', 'failures', 'consecutive_errors', 'cooldowns',
               'cooldown_until', 'latency', 'last_used', 'evicted'}
local new, old = {}, {}
for i, name in ipairs(names) do new[name] = ARGV[i + 1] end
local stored = redis.call('HMGET', key, unpack(names))
local complete = true
for i, name in ipairs(names) do
  if stored[i] == false then complete = false end
  old[name] = stored[i]
end
local merged = new
if complete then
  local function higher(name)
    if tonumber(new[name]) >= tonumber(old[name]) then return new[name] end
    return old[name]
  end
  local newer = tonumber(new.last_used) >= tonumber(old.last_used)
  merged = {successes = higher('successes'), failures = higher('failures'),
            last_used = higher('last_used')}
  if tonumber(new.consecutive_errors) == 0 then
    local state = old
    if newer then state = new end
    merged.consecutive_errors = state.consecutive_errors
    merged.cooldowns = state.cooldowns
    merged.cooldown_until = state.cooldown_until
  else
    merged.consecutive_errors = higher('consecutive_errors')
    merged.cooldowns = higher('cooldowns')
    merged.cooldown_until = higher('cooldown_until')
  end
  merged.latency = old.latency
  if newer then merged.latency = new.latency end
  merged.evicted = '0'
  if new.evicted == '1' or old.evicted == '1' then merged.evicted = '1' end
end
local args = {}
for _, name in ipairs(names) do
  args[#args + 1] = name
  args[#args + 1] = merged[name]
end
redis.call('HSET', key, unpack(args))
if ttl > 0 then redis.call('PEXPIRE', key, ttl) else redis.call('PERSIST', key) end
return 1
"""

# KEYS[1] the domain's hash (tier, since), KEYS[2] its ban times (sorted set, member = score = the time);
# ARGV[1] TTL in ms (0: none, and none left), ARGV[2] tier, ARGV[3] since, ARGV[4] ban times to keep,
# ARGV[5..] ban times.
MERGE_TIER = """
local ttl, tier, since, keep = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local stored = redis.call('HMGET', KEYS[1], 'tier', 'since')
local function add_bans()
  for i = 5, #ARGV do redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i]) end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -keep - 1)
end
if stored[1] == false or stored[2] == false then
  redis.call('HSET', KEYS[1], 'tier', tier, 'since', since)
  redis.call('DEL', KEYS[2])
  add_bans()
elseif tonumber(stored[1]) == tonumber(tier) and tonumber(stored[2]) == tonumber(since) then
  add_bans()
elseif tonumber(since) >= tonumber(stored[2]) then
  redis.call('HSET', KEYS[1], 'tier', tier, 'since', since)
  redis.call('DEL', KEYS[2])
  add_bans()
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[2])
end
return 1
"""
