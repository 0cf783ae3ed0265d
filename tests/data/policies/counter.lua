-- counter.lua — hooks that count their own calls, so a test can see the
-- memo at work: page_size answers 4096 times the number of Lua calls made so
-- far, should_collect alternates false, true, false ...
local page_calls, collect_calls = 0, 0
return {
  name = "counter",
  mechanism = "caching",
  params = {
    scale = { default = 1, range = {1, 8}, integer = true },
  },
  page_size = function(p, bytes)
    page_calls = page_calls + 1
    return 4096 * page_calls * p.scale
  end,
  should_collect = function(p, reserved, allocated)
    collect_calls = collect_calls + 1
    return collect_calls % 2 == 0
  end,
}
