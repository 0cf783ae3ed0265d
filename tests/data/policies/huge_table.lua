-- huge_table.lua — tries to build a gigabyte table at load; the memory budget stops it.
local t = {}
for i = 1, 1 << 27 do
  t[i] = i * 1.5
end
return { name = "huge_table", mechanism = "direct" }
