// A CPU-bound JavaScript workload for benches/runtime.py (duktape): calls
// and recursion, arrays and sorting, objects as maps, string building and
// regular expressions. Prints a checksum.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

function arrays(n) {
  var a = [];
  for (var i = 0; i < n; i++) a.push((i * 7919) % 100003);
  a.sort(function (x, y) { return x - y; });
  var m = {};
  for (var j = 0; j < n; j++) m['k' + a[j]] = j;
  var s = 0;
  for (var k in m) s += k.length + m[k];
  return s;
}

function strings(n) {
  var parts = [];
  for (var i = 0; i < n; i++) parts.push(i + ':' + (i * 31).toString(16) + ':' + (i / 7).toFixed(2));
  var text = parts.join(' ');
  var count = 0, re = /(\d+):([0-9a-f]+)/g, m;
  while ((m = re.exec(text)) !== null) count += m[1].length + m[2].length;
  return count + text.toUpperCase().replace(/A/g, 'b').length;
}

var sum = 0;
for (var r = 0; r < 6; r++) sum += fib(22) + arrays(30000) + strings(20000);
print(sum);
