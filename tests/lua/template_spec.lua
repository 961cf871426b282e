-- Template engine (gen/lib/template.lua) and deterministic formatting (gen/lib/fmt.lua).
local H = require("tests.lua.helper")
local template = require("lib.template")
local fmt = require("lib.fmt")

local NAME = "templates/test/t.kgt"

-- Render text with env; returns output or nil, error.
local function render(text, env)
  local fn, err = template.compile(text, NAME)
  if not fn then return nil, err end
  return fn(setmetatable(env or {}, { __index = _G }))
end

local function render_ok(text, env)
  local out, err = render(text, env)
  assert.is_string(out, err)
  return out
end

-- The error of a failing render, asserted to point at NAME:line.
local function render_err(text, line, env)
  local out, err = render(text, env)
  assert.is_nil(out, "expected an error, got output:\n" .. tostring(out))
  local l = err:match("^" .. NAME:gsub("%p", "%%%0") .. ":(%d+):")
  assert.is_truthy(l, "error does not name " .. NAME .. ":LINE: " .. err)
  assert.are.equal(line, tonumber(l), err)
  return err
end

describe("template engine", function()
  it("substitutes ${expr} with strings and integers", function()
    local out = render_ok("int ${name} = ${n};\n${a .. b}${n * 2}${ t.k }|${f(\"x\")}\n",
      { name = "x", n = 42, a = "A", b = "B", t = { k = "K" }, f = function(s) return s .. s end })
    assert.are.equal("int x = 42;\nAB84K|xx\n", out)
  end)

  it("handles braces inside ${...} and text that only looks like markup", function()
    local out = render_ok("${ ({ v = 7 }).v } { $ {x} } $x %d 100%\n", {})
    assert.are.equal("7 { $ {x} } $x %d 100%\n", out)
  end)

  it("runs lines starting with % as Lua, at any indentation", function()
    local text = table.concat({
      "begin",
      "% for i = 1, n do",
      "  row ${i}",
      "    % if i == 2 then",
      "  two",
      "    % end",
      "% end",
      "%local last = n * 10",
      "end ${last}",
    }, "\n")
    assert.are.equal("begin\n  row 1\n  row 2\n  two\n  row 3\nend 30\n", render_ok(text, { n = 3 }))
  end)

  it("keeps quotes, backslashes, tabs and carriage returns byte-exact", function()
    local text = "printf(\"%s\\n\", \"${s}\");\t// tab\r\n'\\\\' \"\\\"\"\n"
    assert.are.equal("printf(\"%s\\n\", \"q\");\t// tab\r\n'\\\\' \"\\\"\"\n", render_ok(text, { s = "q" }))
  end)

  it("ends the output with a newline whether or not the template does", function()
    assert.are.equal("a\nb\n", render_ok("a\nb", {}))
    assert.are.equal("a\nb\n", render_ok("a\nb\n", {}))
    assert.are.equal("a\n\nb\n", render_ok("a\n\nb\n", {}))
  end)

  it("renders the same compiled template repeatedly with different environments", function()
    local fn = assert(template.compile("${x}\n", NAME))
    assert.are.equal("1\n", fn({ x = 1 }))
    assert.are.equal("two\n", fn({ x = "two" }))
  end)

  it("formats integer-valued floats as integers (same under LuaJIT and Lua 5.4)", function()
    assert.are.equal("3 -4 1024\n", render_ok("${x} ${y} ${2^10}\n", { x = 6 / 2, y = -4.0 }))
  end)

  it("refuses to substitute a non-integer number, naming the template line", function()
    local err = render_err("a\n% local x = 1\nb ${x / 3}\n", 3)
    assert.is_truthy(err:find("must be a string or an integer", 1, true), err)
  end)

  it("refuses to substitute nil, a table or a boolean", function()
    render_err("${missing}\n", 1)
    render_err("a\nb\n${t}\n", 3, { t = {} })
    render_err("a\n${ok}\n", 2, { ok = true })
  end)

  it("floats go through fmt.float", function()
    assert.are.equal("0.5f 1.0f\n", render_ok("${fmt.float(x)} ${fmt.float(1)}\n", { x = 0.5, fmt = fmt }))
  end)

  it("maps each template line to one Lua line in runtime errors", function()
    -- put the failing line after every kind of line: text, substitution, quotes, Lua
    local pieces = {
      "plain text",
      "${a} and ${b}",
      "\"quoted\" 'single' \\backslash\\",
      "% local x = 1",
      "  % if x then\n  % end",
      "% for i = 1, 2 do\nrow ${i}\n% end",
      "",
      "tab\there\r",
    }
    for n = 1, #pieces do
      local text = table.concat(pieces, "\n", 1, n) .. "\n${nothing.field}\nafter\n"
      local _, newlines = text:gsub("\n", "")
      local err = render_err(text, newlines - 1, { a = "A", b = 2 })
      assert.is_truthy(err:find("nothing", 1, true), err)
    end
  end)

  it("reports an error raised by a % line at that line", function()
    local err = render_err("x\ny\n% error('boom')\nz\n", 3)
    assert.is_truthy(err:find("boom", 1, true), err)
  end)

  it("reports a Lua syntax error in a % line at that line", function()
    render_err("x\n\n% for i = 1, 3 do\n${i}\n% end end\n", 5)
  end)

  it("reports an unclosed ${ at compile time, with its line", function()
    local fn, err = template.compile("ok\nstill ok\nbroken ${x\n", NAME)
    assert.is_nil(fn)
    assert.are.equal(NAME .. ":3: error: unclosed '${'", err)
  end)
end)

describe("fmt", function()
  it("formats integers and refuses fractions", function()
    assert.are.equal("7", fmt.int(7))
    assert.are.equal("-3", fmt.int(-3.0))
    assert.has_error(function() fmt.int(1.5) end)
    assert.has_error(function() fmt.int("7") end)
  end)

  it("formats floats with 9 significant digits and an f suffix", function()
    assert.are.equal("1.0f", fmt.float(1))
    assert.are.equal("0.5f", fmt.float(0.5))
    assert.are.equal("0.1f", fmt.float(0.1))
    assert.are.equal("0.333333333f", fmt.float(1 / 3))
    assert.are.equal("1e+20f", fmt.float(1e20))
    assert.are.equal("-2.5f", fmt.float(-2.5))
  end)

  it("sorts keys deterministically, numbers before strings", function()
    assert.are.same({ 1, 2, 10, "a", "b" }, fmt.sorted_keys({ b = 1, a = 1, [10] = 1, [2] = 1, [1] = 1 }))
  end)

  it("joins value lists", function()
    assert.are.equal("row, 8, col", fmt.list({ "row", 8, "col" }))
  end)
end)

describe("template errors through the CLI", function()
  teardown(H.cleanup)

  it("name the template file and line", function()
    local templates = H.stub_templates()
    H.write(templates .. "/gemm/blocked.kgt", "${banner}\n// line 2\n% local t = nil\n// ${t.x}\n")
    local specs = H.spec_dir({ ["a.lua"] = "gemm { backend = \"c\", dtype = \"f32\" }\n" })
    local out, rc = H.kgen("--specs " .. H.q(specs) .. " --templates " .. H.q(templates) .. " --out "
      .. H.q(H.tmpdir() .. "/o"))
    assert.are_not.equal(0, rc)
    local first = H.lines(out)[1]
    assert.are.equal(templates .. "/gemm/blocked.kgt:4:", first:sub(1, #templates + #"/gemm/blocked.kgt:4:"), out)
    -- reported once, not prefixed twice with the path
    assert.are.equal(1, select(2, first:gsub("blocked%.kgt", "")), first)
  end)
end)
