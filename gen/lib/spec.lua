-- Spec loading: runs spec files in a sandbox and records each family call.
--
-- A spec file is Lua that calls family constructors, e.g.
--     gemm { backend = "cuda", dtype = { "f16", "bf16" } }
-- The sandbox exposes only the family constructors and side-effect-free
-- libraries (string, table, math, ipairs, pairs): no os, io, require, load.
local M = {}

local SAFE = { "ipairs", "pairs", "type", "tostring", "tonumber", "select", "string", "table", "math" }

-- Line of the family call that is running: the line holding the family name.
-- LuaJIT and Lua 5.4 disagree on currentline when the name and the '{' sit on
-- different lines, so walk back to the line that names the family.
local function call_line(lines, reported, family)
  for l = reported, 1, -1 do
    local text = lines[l] or ""
    if text:find("%f[%w_]" .. family .. "%f[^%w_]") then return l end
  end
  return reported
end

-- Load one spec file. families: map name -> true. Returns entries, errors.
-- Each entry: { family, fields, file, line, key_lines = { key = line } }.
function M.load(path, families, errors)
  local f = io.open(path, "rb")
  if not f then
    errors[#errors + 1] = path .. ":1: error: cannot read spec file"
    return {}
  end
  local src = f:read("*a")
  f:close()
  local lines = {}
  for l in (src .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end

  local entries = {}
  local env = {}
  for _, name in ipairs(SAFE) do
    local x = _G[name]
    if type(x) == "table" then -- a copy: a spec must not patch the generator's string/table/math
      local copy = {}
      for k, fn in pairs(x) do copy[k] = fn end
      x = copy
    end
    env[name] = x
  end
  for _, fam in ipairs(families) do
    env[fam] = function(fields)
      local info = debug.getinfo(2, "l")
      local line = call_line(lines, info and info.currentline or 1, fam)
      if type(fields) ~= "table" then
        error({ kg = true, line = line, msg = fam .. " expects a table of axes; allowed: " .. fam .. " { axis = value, ... }" })
      end
      entries[#entries + 1] = { family = fam, fields = fields, file = path, line = line }
    end
  end
  setmetatable(env, { __index = function(_, k)
    error({ kg = true, msg = "unknown name '" .. tostring(k) .. "' in spec (the sandbox has no os, io, require)" .. "; allowed families: " .. table.concat(families, ", "), level = 2 })
  end })

  local chunk, err
  if setfenv then
    chunk, err = loadstring(src, "@" .. path)
    if chunk then setfenv(chunk, env) end
  else
    chunk, err = load(src, "@" .. path, "t", env)
  end
  if not chunk then
    local line, msg = tostring(err):match(":(%d+): (.*)$")
    errors[#errors + 1] = string.format("%s:%s: error: syntax: %s", path, line or "1", msg or tostring(err))
    return {}
  end
  local ok, rerr = xpcall(chunk, function(e)
    if type(e) == "table" and e.kg then
      if not e.line then
        -- the innermost frame running the spec file itself (not this loader)
        local level = 2
        while true do
          local info = debug.getinfo(level, "Sl")
          if not info then break end
          if info.source == "@" .. path then e.line = info.currentline break end
          level = level + 1
        end
      end
      return e
    end
    return { msg = tostring(e) }
  end)
  if not ok then
    local line, msg = rerr.line, rerr.msg
    if not line then
      local l, m = msg:match("^[^:]*:(%d+): (.*)$")
      line, msg = l, m or msg
    end
    if not line or line == -1 then line = 1 end
    errors[#errors + 1] = string.format("%s:%d: error: %s", path, tonumber(line), msg)
    return {}
  end

  -- Per-key lines: the first 'key =' at or after the call line, before the next call.
  for i, e in ipairs(entries) do
    local last = entries[i + 1] and entries[i + 1].line - 1 or #lines
    e.key_lines = {}
    for l = e.line, math.max(e.line, last) do
      for key in (lines[l] or ""):gmatch("([%a_][%w_]*)%s*=[^=]") do
        if e.key_lines[key] == nil then e.key_lines[key] = l end
      end
    end
  end
  return entries
end

return M
