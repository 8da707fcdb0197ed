-- Exercises the Lua interpreter (VM, GC, strings, tables, coroutines,
-- metatables, errors, integer/float arithmetic). Each check compares with a
-- known answer; the script prints one line per check and a summary.
local passed, failed = 0, 0
local function check(name, got, want)
  if got == want then
    passed = passed + 1
    print(string.format("ok %s = %s", name, tostring(got)))
  else
    failed = failed + 1
    print(string.format("FAILED %s: got %s, want %s", name, tostring(got), tostring(want)))
  end
end

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
check("fib(27)", fib(27), 196418)

local t = {}
for i = 1, 100000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
check("sort", t[1] .. "," .. t[50000] .. "," .. t[100000], "1,50000,100002")
local sum = 0
for _, v in ipairs(t) do sum = sum + v end
check("sum", sum, 5000073754)

check("integer division", 7 // 2, 3)
check("float division", 7 / 2, 3.5)
check("modulo negative", -7 % 3, 2)
check("integer overflow wraps", math.maxinteger + 1 == math.mininteger, true)
check("float format", string.format("%.3f", math.pi), "3.142")
check("tointeger", math.tointeger(3.0), 3)
check("bitwise", (0xF0 | 0x0F) ~ 0x3C, 0xC3)
check("shift", 1 << 62, 4611686018427387904)
check("sqrt", math.sqrt(2) * math.sqrt(2) - 2 < 1e-15, true)

local s = ("hello world "):rep(3)
check("gsub count", select(2, s:gsub("o", "0")), 6)
check("pattern", ("key=value; other=42"):match("other=(%d+)"), "42")
check("upper", ("repocc"):upper(), "REPOCC")
check("byte/char", string.char(("A"):byte() + 2), "C")
check("format %q", string.format("%q", "a\nb"), '"a\\\nb"')
check("utf8.len", utf8.len("héllo"), 5)
check("concat", table.concat({1, 2, 3}, "-"), "1-2-3")

local words = {}
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do
  words[w] = (words[w] or 0) + 1
end
check("word count", words.the, 2)

local co = coroutine.wrap(function(a)
  local b = coroutine.yield(a + 1)
  local c = coroutine.yield(b * 2)
  return c .. "!"
end)
check("coroutine", co(1) .. "," .. co(10) .. "," .. co("done"), "2,20,done!")

local V = {}
V.__index = V
V.__add = function(a, b) return setmetatable({x = a.x + b.x, y = a.y + b.y}, V) end
V.__tostring = function(v) return "(" .. v.x .. "," .. v.y .. ")" end
local v = setmetatable({x = 1, y = 2}, V) + setmetatable({x = 10, y = 20}, V)
check("metatable", tostring(v), "(11,22)")

local ok, err = pcall(function() error({code = 7}) end)
check("pcall error object", (not ok) and err.code, 7)
local ok2, err2 = pcall(function() local x = nil; return x.field end)
check("runtime error", (not ok2) and (err2:find("attempt to index") ~= nil), true)

local weak = setmetatable({}, {__mode = "k"})
weak[{}] = 1
collectgarbage()
collectgarbage()
local n = 0
for _ in pairs(weak) do n = n + 1 end
check("weak table collected", n, 0)

local big = {}
for i = 1, 200 do big[i] = string.rep("x", i) end
check("string lengths", #table.concat(big), 20100)

local function counter()
  local c = 0
  return function() c = c + 1; return c end
end
local c1, c2 = counter(), counter()
c1(); c1()
check("closures", c1() * 10 + c2(), 31)

do
  local i = 1
  ::top::
  i = i * 2
  if i < 1000 then goto top end
  check("goto", i, 1024)
end

check("load", load("return 6 * 7")(), 42)
check("string.pack", string.unpack("<i4", string.pack("<i4", -2)), -2)
check("os.time", os.time({year = 2000, month = 1, day = 1, hour = 12}) > 0, true)

print(string.format("lua checks: %d passed, %d failed", passed, failed))
if failed > 0 then os.exit(1) end
