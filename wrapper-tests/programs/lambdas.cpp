#include <cstdio>
#include "lambdas.h"
__attribute__((noinline)) int one(int x) { return run(2, x); }
__attribute__((noinline)) int two(int x) { return run(3, x) * 2; }
__attribute__((noinline)) int three(int x) { return run(x, 5) - 1; }
int main() { std::printf("%d %d %d\n", one(3), two(4), three(5)); }
