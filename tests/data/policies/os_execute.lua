-- os_execute.lua — tries to run a shell command at load; the sandbox has no os.
local name = "os_execute"
os.execute("touch /tmp/pagetune-pwned")
return { name = name, mechanism = "direct" }
