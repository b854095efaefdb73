-- The metatable of shells (agent/src/lazy.rs): tables standing for parts of an object handed
-- to a script, filled with their members on first touch. `slot.fill` is the current call's
-- filler; it takes the metatable away, so a filled shell is a plain table.
local rawget, rawset, rawlen, next, error = rawget, rawset, rawlen, next, error
local slot, shell = {}, {}

local function fill(t)
  local f = slot.fill
  if f == nil then
    error("an object handed to evaluate() can be read only during that call", 3)
  end
  f(t)
end

shell.__index = function(t, k) fill(t) return rawget(t, k) end
shell.__newindex = function(t, k, v) fill(t) rawset(t, k, v) end
shell.__len = function(t) fill(t) return rawlen(t) end
shell.__pairs = function(t) fill(t) return next, t, nil end

return shell, slot, fill
