#include <cstdio>
#include "lambdas.h"
__attribute__((noinline)) int one(int x) { return run(2, x); }
__attribute__((noinline)) int two(int x) { return run(3, x) * 2; }
__attribute__((noinline)) int three(int x) { return run(x, 5) - 1; }
// A class local to a function, with virtual methods: its vtable's
// fragment refers to methods whose scope is that function.
struct Shape {
  virtual ~Shape() {}
  virtual int area() const = 0;
};
__attribute__((noinline)) int measure(Shape *s) {
  int a = s->area();
  delete s;
  return a;
}
int square(int side) {
  struct Square : Shape {
    int side;
    explicit Square(int s) : side(s) {}
    ~Square() override { std::printf("square %d gone\n", side); }
    int area() const override { return side * side; }
  };
  return measure(new Square(side));
}
int main() { std::printf("%d %d %d %d\n", one(3), two(4), three(5), square(6)); }
