-- lua_hooks.lua — a benchmark policy: PyTorch's caching allocator with its
-- rounding and segment-size rules re-stated as Lua hooks, so that comparing
-- its replay speed with pytorch_native's measures what the hooks cost
-- (each hook is memoised by its argument). Same rules, same results.
return {
  name = "lua_hooks",
  doc = "pytorch_native with round and segment_size as Lua hooks (benchmark)",
  mechanism = "caching",
  params = {},
  round = function(p, bytes)
    if bytes < 512 then return 512 end
    return 512 * ((bytes + 511) // 512)
  end,
  segment_size = function(p, bytes)
    if bytes <= 1048576 then return 2097152 end
    if bytes < 10485760 then return 20971520 end
    return 2097152 * ((bytes + 2097151) // 2097152)
  end,
}
