-- collect_hook.lua — a should_collect hook: its result depends on reserved and
-- allocated bytes, not one size, so export refuses to make it a table.
return {
  name = "collect_hook",
  mechanism = "caching",
  should_collect = function(p, reserved, allocated) return reserved > 2 * allocated end,
}
