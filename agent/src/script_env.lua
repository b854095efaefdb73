-- Builds the private environment of one EventSource script. Runs once per Lua state with the
-- real globals; scripts never see them. Each script gets copies of the library tables, so a
-- script that changes `string.upper` changes only its own copy.
local G, modules = ...
local realload, realpcall, realxpcall, select, type, error = G.load, G.pcall, G.xpcall, G.select, G.type, G.error
local tostring_, fmt, mtype, pack, unpack = G.tostring, G.string.format, G.math.type, G.table.pack, G.table.unpack
local exhausted = modules.__exhausted
local emit, printing, concat = modules.__print, modules.__printing, G.table.concat
local setmetatable, pairs, next = G.setmetatable, G.pairs, G.next
local getmetatable, rawget, rawset, rawlen = G.getmetatable, G.rawget, G.rawset, G.rawlen
local rawequal = G.rawequal
local shell, fill = modules.__shell, modules.__fill

-- The string metatable stays out of reach (getmetatable("") returns false).
G.getmetatable("").__metatable = false

local safe = {
  "assert", "error", "ipairs", "next", "pairs", "rawequal", "rawget", "rawlen", "rawset",
  "select", "setmetatable", "getmetatable", "tonumber", "type",
}

-- Lua 5.1 prints integral floats without ".0" (all its numbers are floats).
local function tostring51(v)
  if mtype(v) == "float" then
    return fmt("%.14g", v)
  end
  return tostring_(v)
end

-- A caught error never hides an exhausted instruction budget.
local function rethrow(ok, ...)
  if not ok and exhausted() then
    error((...), 0)
  end
  return ok, ...
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Puts a script's globals back as they were after its top-level run (runs with no budget:
-- what it walks is bounded by what one call could allocate).
local function restore(env, snapshot)
  for k, v in next, env do
    local original = rawget(snapshot, k)
    -- rawequal: a script's __eq must not run here, outside its budget.
    if not rawequal(original, v) then rawset(env, k, original) end
  end
  for k, v in next, snapshot do
    if rawget(env, k) == nil then rawset(env, k, v) end
  end
end

local function make_env()
  local env = {}
  local base = {}
  for _, name in G.ipairs(safe) do base[name] = G[name] end
  base.tostring = tostring51
  -- The raw functions see a shell as the table it stands for (agent/src/lazy.rs).
  local function filling(f)
    return function(...)
      local t = ...
      if getmetatable(t) == shell then fill(t) end
      return f(...)
    end
  end
  base.next, base.rawget, base.rawset = filling(next), filling(rawget), filling(rawset)
  base.rawlen, base.setmetatable = filling(rawlen), filling(setmetatable)
  base.getmetatable = function(...)
    local mt = getmetatable(...)
    if mt == shell then return nil end
    return mt
  end
  -- print writes nowhere unless the runtime keeps it (eval shows it on standard error); in
  -- an agent it costs nothing, as it did before eval showed it.
  if printing() then
    base.print = function(...)
      local parts = {}
      for i = 1, select("#", ...) do parts[i] = tostring51((select(i, ...))) end
      emit(concat(parts, "\t"))
    end
  else
    base.print = function() end
  end
  base._VERSION = "Lua 5.1"
  base.pcall = function(...) return rethrow(realpcall(...)) end
  base.xpcall = function(...) return rethrow(realxpcall(...)) end
  local function sload(chunk, name, mode, e)
    if type(chunk) ~= "string" then
      return nil, "load: only source strings are accepted in the sandbox"
    end
    return realload(chunk, name, "t", e or env)
  end
  base.load = sload
  base.loadstring = function(s, name) return sload(s, name) end
  base.unpack = unpack

  local string_ = copy(G.string)
  string_.gfind = G.string.gmatch
  string_.dump = nil
  local table_ = copy(G.table)
  table_.getn = function(t) return #t end
  table_.maxn = function(t)
    local n = 0
    for k in pairs(t) do
      if mtype(k) ~= nil and k > n then n = k end
    end
    return n
  end
  table_.setn = function() error("setn is obsolete", 2) end
  local math_ = copy(G.math)
  math_.pow = function(a, b) return a ^ b end
  math_.mod = G.math.fmod
  math_.log10 = function(x) return G.math.log(x, 10) end
  math_.ldexp = function(m, e) return m * 2.0 ^ e end
  -- No coroutines: instruction hooks do not follow new threads, so a loop there would escape the budget.
  base.string, base.table, base.math, base.utf8 = string_, table_, math_, copy(G.utf8)

  for k, v in pairs(modules.globals) do base[k] = v end
  local loaded = {}
  base.require = function(name)
    local m = loaded[name]
    if m ~= nil then return m end
    local make = modules.preload[name]
    if make == nil then
      error("module '" .. tostring_(name) .. "' not found: the sandbox offers json, strings, runes and sprig", 2)
    end
    m = make()
    loaded[name] = m
    return m
  end
  base._G = env
  return setmetatable(env, { __index = base, __metatable = false })
end

return make_env, restore
