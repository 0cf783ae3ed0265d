-- wrong_shape.lua — returns a number where a policy returns a table.
local answer = 42

return answer
