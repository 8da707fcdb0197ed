-- A CPU-bound Lua workload for benches/runtime.py: calls and recursion,
-- table construction and sorting, string building, formatting and
-- pattern matching, closures. Prints a checksum so that nothing is
-- optimized away and the builds can be compared.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function tables(n)
  local t = {}
  for i = 1, n do t[i] = (i * 7919) % 100003 end
  table.sort(t)
  local m = {}
  for i = 1, n do m["k" .. t[i]] = i end
  local s = 0
  for k, v in pairs(m) do s = s + #k + v end
  return s
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%x:%5.2f", i, i * 31, i / 7) end
  local text = table.concat(parts, " ")
  local count = 0
  for a, b in text:gmatch("(%d+):(%x+)") do count = count + #a + #b end
  return count + #text:upper():gsub("A", "b")
end

local function closures(n)
  local acc = 0
  local function adder(k) return function(x) return x + k end end
  for i = 1, n do acc = adder(i % 13)(acc) % 1000003 end
  return acc
end

local sum = 0
for _ = 1, 3 do
  sum = sum + fib(27) + tables(100000) + strings(60000) + closures(1000000)
end
print(sum)
