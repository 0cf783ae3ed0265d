-- burn_every_call.lua — loads fine; its round hook spends most of its
-- per-call instruction budget on every call (every distinct request size),
-- so no single call trips the per-call budget while a run of thousands of
-- calls would take minutes.
return {
  name = "burn_every_call",
  mechanism = "caching",
  round = function(p, bytes)
    local n = 0
    for i = 1, 4000000 do n = n + i end
    return bytes + (n < 0 and 1 or 0)
  end,
}
