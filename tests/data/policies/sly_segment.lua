-- sly_segment.lua — a segment_size written to slip past the sample points:
-- 2 MiB multiples, except on odd sizes above 64 MiB that are not next to a
-- power of two (none of the sizes resolution samples), where it adds 2 MiB.
-- The verifier's pseudo-random sizes find it (tests/test_hooktab.c).
local MiB = 1024 * 1024
local function near_pow2(b)
  local x = 1
  while x <= b + 1 do
    if b == x - 1 or b == x + 1 then return true end
    x = x * 2
  end
  return false
end
return {
  name = "sly_segment",
  mechanism = "caching",
  segment_size = function(p, bytes)
    local r = (bytes + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)
    if bytes > 64 * MiB and bytes % 2 == 1 and not near_pow2(bytes) then return r + 2 * MiB end
    return r
  end,
}
