#include "inits.h"
#include <typeinfo>
static int local_static() { static int z = counter(); return z; }
std::string describe(const Base &b) { return std::string(typeid(b).name()) + ":" + std::to_string(b.f()); }
int unit_a() {
  Box<int>::value = 3;
  int r = Box<int>::value + Box<double>::count * 0 + local_static() * 0;
  r += make_adder(4)(1) + use_lambda(2) + tls_ref() * 0 + tls_inline;
  std::map<std::string, int> m{{"a", 1}, {"b", 2}};
  for (auto &[k, v] : m) r += v * (int)k.size();
  try { throws(5); } catch (const std::exception &e) { std::printf("A caught %s\n", e.what()); }
  VD vd; r += vsum(vd); r += fib<10>(); r += atom.fetch_add(1);
  TD<short> t; r += t.f();
  std::printf("A %d %s %s %zu\n", r, lit(), registry_name().c_str(), gvec.size());
  return r;
}
