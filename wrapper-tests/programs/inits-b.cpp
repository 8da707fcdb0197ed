#include "inits.h"
#include <algorithm>
int unit_b() {
  Box<int>::value += 2; int r = Box<int>::value;
  std::vector<std::string> w{"x", "yy", "zzz"};
  std::sort(w.begin(), w.end(), [](auto &a, auto &b) { return a.size() > b.size(); });
  r += (int)w[0].size() + use_lambda(5) + tls_inline++;
  std::unique_ptr<Base> p = std::make_unique<Derived>(); r += p->f();
  std::unique_ptr<Base> q = std::make_unique<TD<long>>(); r += q->f();
  std::function<int(int)> fn = make_adder(10); r += fn(1);
  try { throws(3); } catch (const std::runtime_error &e) { std::printf("B caught %s\n", e.what()); }
  registry_name() += "+b"; gvec.push_back(9);
  r += fib<12>() + atom.load();
  std::printf("B %d %s %s\n", r, lit(), describe(*q).c_str());
  return r;
}
