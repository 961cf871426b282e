-- Deterministic formatting shared by every emitter.
local M = {}

-- Integer as %d; refuses non-integers so no float leaks into output by accident.
function M.int(x)
  if type(x) ~= "number" or x ~= math.floor(x) then
    error("expected an integer, got " .. tostring(x), 2)
  end
  return string.format("%d", x)
end

-- Float literal for C: fixed 9 significant digits, always with an 'f' suffix.
function M.float(x)
  local s = string.format("%.9g", x)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s .. "f"
end

-- Sorted keys of a table (strings or numbers).
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) < type(b)
  end)
  return keys
end

-- "a, b, c" for a list of values.
function M.list(values)
  local out = {}
  for i, v in ipairs(values) do out[i] = type(v) == "string" and v or M.int(v) end
  return table.concat(out, ", ")
end

return M
