-- infinite_loop.lua — never finishes loading; the instruction budget stops it.
local n = 0
while true do
  n = n + 1
end
return { name = "infinite_loop", mechanism = "direct" }
