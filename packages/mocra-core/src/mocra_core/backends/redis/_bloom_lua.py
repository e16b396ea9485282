"""The Lua scripts of `RedisBloomSeenSet`: a scalable Bloom filter over Redis strings, one script per batch.

Keys: `KEYS[1]` is a hash holding the series' parameters (`capacity`, `rate`, fixed by the first call),
its length (`filters`), the room left in its last filter (`room`) and the fingerprints answered new
(`count`); filter `i` is the string `KEYS[1]:i`, allocated whole when it is started (`SETRANGE`). The
layout is `mocra_core.dedup._bloom.filter_layout`, computed with the same formulas (IEEE doubles, the
same libm). A fingerprint's `k` bits in a filter of `m` bits are `(h1 + j * h2) mod m`, `j < k`, where
`h1`, `h2` are its bytes 9-12 and 13-16 as little-endian 32-bit integers (double hashing, Kirsch and
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
local MAXBITS = 4294967296
local meta = KEYS[1]

local function layout(i, cap0, rate)
  local p = rate * 0.5 ^ (i + 1)
  local n = cap0 * 2 ^ i
  local bits = math.ceil(-n * math.log(p) / LN2SQ)
  if bits > MAXBITS then
    bits = MAXBITS
    n = math.floor(bits * LN2SQ / -math.log(p))
  end
  local k = math.floor(-math.log(p) / math.log(2) + 0.5)
  if k < 1 then k = 1 end
  return n, bits, k
end

local function hashes(batch)
  local h1, h2 = {}, {}
  for i = 1, #batch / 16 do
    h1[i], h2[i] = struct.unpack('<I4I4', batch, (i - 1) * 16 + 9)
  end
  return h1, h2
end

-- Run `cmd` (BITFIELD_RO ... GET or BITFIELD ... SET) over the bits of the fingerprints `idx` in filter
-- `f`; return the indices whose bits were all 1 (found) and those with a 0 bit (missing), in order.
local function probe(cmd, f, idx, h1, h2, cap0, rate)
  local _, m, k = layout(f, cap0, rate)
  local key = meta .. ':' .. f
  local per = math.max(1, math.floor(OPS / k))
  local found, missing = {}, {}
  for s = 1, #idx, per do
    local e = math.min(#idx, s + per - 1)
    local args = {cmd, key}
    local n = 2
    for t = s, e do
      local a, b = h1[idx[t]], h2[idx[t]]
      for j = 0, k - 1 do
        if cmd == 'BITFIELD' then
          args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', (a + j * b) % m, 1
          n = n + 4
        else
          args[n + 1], args[n + 2], args[n + 3] = 'GET', 'u1', (a + j * b) % m
          n = n + 3
        end
      end
    end
    local bits = redis.call(unpack(args))
    local r = 1
    for t = s, e do
      local all = true
      for j = 1, k do
        if bits[r] == 0 then all = false end
        r = r + 1
      end
      if all then found[#found + 1] = idx[t] else missing[#missing + 1] = idx[t] end
    end
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
local h1, h2 = hashes(batch)
local answer, pending = {}, {}
for i = 1, #h1 do
  answer[i] = '0'
  pending[i] = i
end
for f = 0, nf - 2 do  -- the full filters
  if #pending == 0 then break end
  local _, missing = probe('BITFIELD_RO', f, pending, h1, h2, cap0, rate)
  pending = missing
end
local i = 1
while i <= #pending do
  if room == 0 then  -- start a filter; the last one is full and is checked like the others
    if nf > 0 then
      local rest = {}
      for t = i, #pending do rest[#rest + 1] = pending[t] end
      local _, missing = probe('BITFIELD_RO', nf - 1, rest, h1, h2, cap0, rate)
      pending, i = missing, 1
    end
    local cap, bits = layout(nf, cap0, rate)
    redis.call('SETRANGE', meta .. ':' .. nf, math.ceil(bits / 8) - 1, '\\0')
    nf, room = nf + 1, cap
  end
  if i > #pending then break end
  local seg = {}
  for t = i, math.min(#pending, i + room - 1) do seg[#seg + 1] = pending[t] end
  local _, new = probe('BITFIELD', nf - 1, seg, h1, h2, cap0, rate)
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
local h1, h2 = hashes(ARGV[1])
for f = 0, nf - 1 do
  local found = probe('BITFIELD_RO', f, {1}, h1, h2, cap0, rate)
  if #found > 0 then return 1 end
end
return 0
"""
)
