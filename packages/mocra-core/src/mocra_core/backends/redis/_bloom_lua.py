"""The Lua scripts of `RedisBloomSeenSet`: a scalable Bloom filter over Redis strings, one script per batch.

Keys: `KEYS[1]` is a hash holding the series' parameters (`capacity`, `rate`, fixed by the first call),
its length (`filters`), the room left in its last filter (`room`) and the fingerprints answered new
(`count`); filter `i` is the strings `KEYS[1]:i:s`, one per segment `s`, each allocated whole when the
filter is started (`SETRANGE` of a new key allocates exactly). The layout is
`mocra_core.dedup._bloom.filter_layout`, computed with the same formulas (IEEE doubles, the same libm).
With h3, h1, h2 the fingerprint's bytes 5-8, 9-12 and 13-16 as little-endian 32-bit integers, its
segment is `h3 mod S` and its `k` bits there `(h1 + j * h2) mod m`, `j < k` (double hashing, Kirsch and
Mitzenmacher); every value stays below 2**53, so Lua's doubles are exact. Bits are read with
`BITFIELD_RO … GET u1` and written with `BITFIELD … SET u1`, whose answer is the old bit: a
fingerprint is new to the last filter when one of its old bits was 0. Calls carry at most `OPS`
operations (a SET is 4 arguments; `unpack` takes fewer than 8,000).
"""

from __future__ import annotations

__all__ = ("ADD_IF_ABSENT", "CONTAINS")

_COMMON = """
local OPS = 1500
local LN2SQ = math.log(2) ^ 2
local SEG = (1048576 - 16) * 8
local meta = KEYS[1]

-- capacity, bits (by the formula), hashes, segments and bits per segment of filter i
local function layout(i, cap0, rate)
  local p = rate * 0.5 ^ (i + 1)
  local n = cap0 * 2 ^ i
  local bits = math.ceil(-n * math.log(p) / LN2SQ)
  local k = math.floor(-math.log(p) / math.log(2) + 0.5)
  if k < 1 then k = 1 end
  local segments = math.ceil(bits / SEG)
  if segments == 1 then return n, bits, k, 1, bits end
  return n, bits, k, segments, SEG
end

local function hashes(batch)
  local h1, h2, h3 = {}, {}, {}
  for i = 1, #batch / 16 do
    h3[i], h1[i], h2[i] = struct.unpack('<I4I4I4', batch, (i - 1) * 16 + 5)
  end
  return h1, h2, h3
end

-- Run `cmd` (BITFIELD_RO … GET or BITFIELD … SET) over the bits of the fingerprints `idx` in filter `f`,
-- segment by segment; return the indices whose bits were all 1 (found) and the others, in order.
local function probe(cmd, f, idx, h, cap0, rate)
  local _, _, k, segments, m = layout(f, cap0, rate)
  local h1, h2, h3 = h[1], h[2], h[3]
  local groups, order = {}, {}
  for _, i in ipairs(idx) do
    local s = h3[i] % segments
    local g = groups[s]
    if not g then
      g = {}
      groups[s] = g
      order[#order + 1] = s
    end
    g[#g + 1] = i
  end
  local all = {}
  local per = math.max(1, math.floor(OPS / k))
  for _, s in ipairs(order) do
    local g, key = groups[s], meta .. ':' .. f .. ':' .. s
    for first = 1, #g, per do
      local last = math.min(#g, first + per - 1)
      local args, n = {cmd, key}, 2
      if cmd == 'BITFIELD' then
        for t = first, last do
          local a, b = h1[g[t]], h2[g[t]]
          for j = 0, k - 1 do
            args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', (a + j * b) % m, 1
            n = n + 4
          end
        end
      else
        for t = first, last do
          local a, b = h1[g[t]], h2[g[t]]
          for j = 0, k - 1 do
            args[n + 1], args[n + 2], args[n + 3] = 'GET', 'u1', (a + j * b) % m
            n = n + 3
          end
        end
      end
      local bits = redis.call(unpack(args))
      local r = 1
      for t = first, last do
        local ones = true
        for _ = 1, k do
          if bits[r] == 0 then ones = false end
          r = r + 1
        end
        all[g[t]] = ones
      end
    end
  end
  local found, missing = {}, {}
  for _, i in ipairs(idx) do
    if all[i] then found[#found + 1] = i else missing[#missing + 1] = i end
  end
  return found, missing
end

local function params()
  local st = redis.call('HMGET', meta, 'capacity', 'rate', 'filters', 'room', 'count')
  return tonumber(st[1]), tonumber(st[2]), tonumber(st[3]) or 0, tonumber(st[4]) or 0, tonumber(st[5]) or 0
end
"""

ADD_IF_ABSENT = (
    _COMMON
    + """
-- ARGV[1]: the batch's fingerprints end to end; ARGV[2], ARGV[3]: capacity and rate (if the series is new).
-- Returns one byte per fingerprint: '1' new (now added), '0' seen.
local batch = ARGV[1]
redis.call('HSETNX', meta, 'capacity', ARGV[2])
redis.call('HSETNX', meta, 'rate', ARGV[3])
local cap0, rate, nf, room, count = params()
local h = {hashes(batch)}
local answer, pending = {}, {}
for i = 1, #batch / 16 do
  answer[i] = '0'
  pending[i] = i
end
for f = 0, nf - 2 do  -- the full filters
  if #pending == 0 then break end
  local _, missing = probe('BITFIELD_RO', f, pending, h, cap0, rate)
  pending = missing
end
local i = 1
while i <= #pending do
  if room == 0 then  -- start a filter; the last one is full and is checked like the others
    if nf > 0 then
      local rest = {}
      for t = i, #pending do rest[#rest + 1] = pending[t] end
      local _, missing = probe('BITFIELD_RO', nf - 1, rest, h, cap0, rate)
      pending, i = missing, 1
    end
    local cap, _, _, segments, m = layout(nf, cap0, rate)
    for s = 0, segments - 1 do  -- a fresh string of zeros, whatever a deleted series left there
      redis.call('DEL', meta .. ':' .. nf .. ':' .. s)
      redis.call('SETRANGE', meta .. ':' .. nf .. ':' .. s, math.ceil(m / 8) - 1, '\\0')
    end
    nf, room = nf + 1, cap
  end
  if i > #pending then break end
  local seg = {}
  for t = i, math.min(#pending, i + room - 1) do seg[#seg + 1] = pending[t] end
  local _, new = probe('BITFIELD', nf - 1, seg, h, cap0, rate)
  for _, t in ipairs(new) do answer[t] = '1' end
  room, count = room - #new, count + #new
  i = i + #seg
end
redis.call('HSET', meta, 'filters', nf, 'room', room, 'count', count)
return table.concat(answer)
"""
)

CONTAINS = (
    _COMMON
    + """
-- ARGV[1]: one fingerprint. Returns 1 if it is (probably) in the series, else 0.
local cap0, rate, nf = params()
local h = {hashes(ARGV[1])}
for f = 0, nf - 1 do
  local found = probe('BITFIELD_RO', f, {1}, h, cap0, rate)
  if #found > 0 then return 1 end
end
return 0
"""
)
