-- infinite_loop_hook.lua — loads fine; its page_size hook never returns.
return {
  name = "infinite_loop_hook",
  mechanism = "caching",
  page_size = function(p, bytes)
    local n = 0
    while true do
      n = n + bytes
    end
  end,
}
