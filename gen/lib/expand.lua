-- Variant expansion: validates spec entries against their family's axes,
-- expands list-valued axes to the cartesian product, fills defaults, applies
-- legality rules and names each variant.
--
-- A family module declares:
--   axes      ordered list of { name, values = {...}, default = value|function(v) }
--             (no default: the axis is required)
--   legal(v)  nil when v is legal, else a message (and optionally the axis at fault)
--   name_of(v)   canonical name (file name, symbol and table identity)
--   describe(v)  optional short axis summary for "illegal combination" errors
--                (default: every axis as axis=value)
local fmt = require("lib.fmt")

local M = {}

local function quote_list(values)
  local out = {}
  for i, v in ipairs(values) do
    out[i] = type(v) == "string" and v or type(v) == "boolean" and tostring(v) or fmt.int(v)
  end
  return table.concat(out, ", ")
end

local function is_allowed(axis, value)
  for _, a in ipairs(axis.values) do if a == value then return true end end
  return false
end

local function is_list(x) return type(x) == "table" end

-- Default describe(v): "axis=value ..." over the family's axes, in order.
local function describe(v, family)
  local parts = {}
  for _, axis in ipairs(family.axes) do
    local x = v[axis.name]
    parts[#parts + 1] = axis.name .. "=" .. (type(x) == "number" and fmt.int(x) or tostring(x))
  end
  return table.concat(parts, " ")
end

-- Expand one spec entry; appends variants to out and messages to errors.
local function expand_entry(family, entry, out, errors)
  local function err(key, msg)
    local line = key and entry.key_lines[key] or entry.line
    errors[#errors + 1] = string.format("%s:%d: error: %s", entry.file, line, msg)
  end
  local axis_by_name, axis_names = {}, {}
  for _, axis in ipairs(family.axes) do
    axis_by_name[axis.name] = axis
    axis_names[#axis_names + 1] = axis.name
  end
  local ok = true
  for _, key in ipairs(fmt.sorted_keys(entry.fields)) do
    if type(key) ~= "string" or not axis_by_name[key] then
      err(type(key) == "string" and key or nil, string.format("unknown axis '%s' for %s; allowed: %s",
        tostring(key), family.name, table.concat(axis_names, ", ")))
      ok = false
    end
  end
  -- explicit values, each checked against the allowed list
  local choices = {}
  for _, axis in ipairs(family.axes) do
    local given = entry.fields[axis.name]
    if given ~= nil then
      local list = is_list(given) and given or { given }
      if #list == 0 then
        err(axis.name, string.format("axis '%s' is an empty list; allowed: %s", axis.name, quote_list(axis.values)))
        ok = false
      end
      for _, value in ipairs(list) do
        if not is_allowed(axis, value) then
          err(axis.name, string.format("%s = %s is not allowed; allowed: %s", axis.name,
            type(value) == "string" and ('"' .. value .. '"') or tostring(value), quote_list(axis.values)))
          ok = false
        end
      end
      choices[#choices + 1] = { axis = axis, list = list }
    elseif axis.default == nil then
      err(nil, string.format("%s needs axis '%s'; allowed: %s", family.name, axis.name, quote_list(axis.values)))
      ok = false
    end
  end
  if not ok then return end

  -- cartesian product over explicit axes, in axis order
  local combos = { {} }
  for _, c in ipairs(choices) do
    local next_combos = {}
    for _, partial in ipairs(combos) do
      for _, value in ipairs(c.list) do
        local v = {}
        for k, x in pairs(partial) do v[k] = x end
        v[c.axis.name] = value
        next_combos[#next_combos + 1] = v
      end
    end
    combos = next_combos
  end

  for _, v in ipairs(combos) do
    for _, axis in ipairs(family.axes) do
      if v[axis.name] == nil then
        local d = axis.default
        if type(d) == "function" then d = d(v) end
        v[axis.name] = d
      end
    end
    local why, at = family.legal(v)
    if why then
      err(at, string.format("illegal combination (%s): %s", (family.describe or describe)(v, family), why))
    else
      v.family = family.name
      v.spec_file = entry.file
      v.spec_line = entry.line
      v.name = family.name_of(v)
      out[#out + 1] = v
    end
  end
end

-- Turn a glob list "a*,b?c" into a predicate on names; nil filter accepts all.
function M.name_filter(globs)
  if not globs or globs == "" then return function() return true end end
  local patterns = {}
  for glob in globs:gmatch("[^,]+") do
    local p = glob:gsub("^%s+", ""):gsub("%s+$", "")
    p = p:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".")
    patterns[#patterns + 1] = "^" .. p .. "$"
  end
  return function(name)
    for _, p in ipairs(patterns) do if name:find(p) then return true end end
    return false
  end
end

-- Expand all entries. families: name -> module. Returns variants sorted by name.
function M.expand(families, entries, errors)
  local variants, seen = {}, {}
  for _, entry in ipairs(entries) do
    local list = {}
    expand_entry(families[entry.family], entry, list, errors)
    for _, v in ipairs(list) do
      local where = v.spec_file .. ":" .. fmt.int(v.spec_line)
      if seen[v.name] then
        errors[#errors + 1] = string.format("%s: error: duplicate variant name '%s' (first declared at %s); allowed: one declaration per name",
          where, v.name, seen[v.name])
      else
        seen[v.name] = where
        variants[#variants + 1] = v
      end
    end
  end
  table.sort(variants, function(a, b) return a.name < b.name end)
  return variants
end

return M
