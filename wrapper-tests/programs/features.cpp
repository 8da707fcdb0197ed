// C++ features: templates, virtual dispatch, exceptions across units,
// RTTI, static initialisation, inline variables, lambdas, std::function,
// containers, thread_local, multiple inheritance.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "features-cxx.h"

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
  virtual std::string name() const { return "shape"; }
};
struct Square : Shape {
  double s;
  explicit Square(double s) : s(s) {}
  double area() const override { return s * s; }
  std::string name() const override { return "square"; }
};
struct Circle : Shape {
  double r;
  explicit Circle(double r) : r(r) {}
  double area() const override { return 3.14159 * r * r; }
};

struct A { virtual int a() const { return 1; } virtual ~A() = default; };
struct B { virtual int b() const { return 2; } virtual ~B() = default; };
struct C : A, B { int a() const override { return 10; } int b() const override { return 20; } };

static int init_order = compute_initial();
thread_local int tl_counter = 5;

template <typename T> T clamp_sum(const std::vector<T>& v, T lo, T hi) {
  T s = std::accumulate(v.begin(), v.end(), T{});
  return std::min(std::max(s, lo), hi);
}

int main() {
  std::vector<std::unique_ptr<Shape>> shapes;
  shapes.push_back(std::make_unique<Square>(3));
  shapes.push_back(std::make_unique<Circle>(1));
  for (auto& s : shapes) { const Shape& ref = *s; std::cout << s->name() << " " << s->area() << " " << (typeid(ref) == typeid(Square)) << "\n"; }
  C c;
  B* pb = &c;
  std::cout << "mi " << pb->b() << " " << dynamic_cast<A*>(pb)->a() << "\n";
  try {
    throw_if_negative(-4);
  } catch (const std::invalid_argument& e) {
    std::cout << "caught " << e.what() << "\n";
  }
  std::cout << "init " << init_order << " registry " << Registry::instance().size() << "\n";
  std::map<std::string, int> m{{"b", 2}, {"a", 1}, {"c", 3}};
  std::unordered_map<int, std::string> um{{1, "one"}, {2, "two"}};
  std::ostringstream os;
  for (auto& [k, v] : m) os << k << v;
  std::cout << "map " << os.str() << " " << um.at(2) << "\n";
  std::function<int(int)> f = [k = 3](int x) { return x * k; };
  std::vector<int> v{5, 1, 4, 2, 3};
  std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
  std::cout << "lambda " << f(7) << " sorted " << v[0] << v[4] << "\n";
  std::cout << "template " << clamp_sum<int>(v, 0, 12) << " " << clamp_sum<double>({0.5, 0.25}, 0, 1) << "\n";
  std::cout << "shared " << shared_twice(21) << " " << Counter<int>::bump() << Counter<int>::bump() << "\n";
  tl_counter++;
  std::cout << "probe " << KnobProbe::read(Gauge{4}) << " " << probe_here() << "\n";
  std::cout << "tls " << tl_counter << " other " << other_unit_value() << "\n";
  return 0;
}
