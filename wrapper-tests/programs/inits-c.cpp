#include "inits.h"
#include <thread>
struct Init { Init() { registry_name() += "+c"; } } init_c;
int unit_c() {
  int r = 0;
  std::thread th([&] { r = tls_ref() + tls_inline; }); th.join();
  std::map<std::string, int> m; m["q"] = 4; r += m["q"];
  VD vd; r += vsum(vd);
  Derived d; r += d.f() + Box<double>::count * 0;
  std::printf("C %d %s %d\n", r, describe(d).c_str(), counter() > 0);
  return r;
}
int main() { int s = unit_a() + unit_b() + unit_c(); std::printf("sum %d %s\n", s, registry_name().c_str()); return 0; }
