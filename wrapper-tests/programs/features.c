/* C features whose code generation repocc must get right: static and
   global state, function pointers and tables, varargs, setjmp/longjmp,
   floating point, struct passing, bitfields, switch tables, TLS,
   constructors/destructors, weak symbols, aliases, inline asm, computed
   goto, VLAs, qsort callbacks, 128-bit integers, complex numbers, atomics,
   threads. Prints a line per feature; the differential test compares the
   output with clang-19's build. */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features.h"

static int counter;
int global_table[8] = {1, 1, 2, 3, 5, 8, 13, 21};
__thread int tls_value = 7;
static int ctor_ran;

__attribute__((constructor)) static void early(void) { ctor_ran = 42; }
__attribute__((destructor)) static void late(void) { printf("destructor ran\n"); }

__attribute__((weak)) int weak_hook(void) { return -1; }
int real_impl(int x) { return x * 3; }
int aliased_impl(int x) __attribute__((alias("real_impl")));

static int sum_va(int n, ...) {
  va_list ap;
  va_start(ap, n);
  int s = 0;
  for (int i = 0; i < n; i++) s += va_arg(ap, int);
  va_end(ap);
  return s;
}

struct point { double x, y; };
struct flags { unsigned a : 3, b : 5, c : 1; };

static struct point mid(struct point p, struct point q) {
  struct point r = {(p.x + q.x) / 2, (p.y + q.y) / 2};
  return r;
}

static const char *classify(int v) {
  switch (v) {
    case 0: return "zero"; case 1: return "one"; case 2: return "two";
    case 3: return "three"; case 4: return "four"; case 5: return "five";
    case 6: return "six"; case 7: return "seven"; default: return "many";
  }
}

static int cmp_desc(const void *a, const void *b) {
  return *(const int *)b - *(const int *)a;
}

static jmp_buf jb;
static void jumper(int v) { if (v > 2) longjmp(jb, v); }

static int computed_goto(int n) {
  static void *labels[] = {&&l0, &&l1, &&l2};
  int acc = 0;
  goto *labels[n % 3];
l0: acc += 1;
l1: acc += 10;
l2: acc += 100;
  return acc;
}

static int vla_sum(int n) {
  int a[n];
  for (int i = 0; i < n; i++) a[i] = i * i;
  int s = 0;
  for (int i = 0; i < n; i++) s += a[i];
  return s;
}

static atomic_int shared_count;
static void *worker(void *arg) {
  int n = *(int *)arg;
  for (int i = 0; i < n; i++) atomic_fetch_add(&shared_count, 1);
  tls_value += n;
  return (void *)(intptr_t)tls_value;
}

typedef int (*binop)(int, int);
static int op_add(int a, int b) { return a + b; }
static int op_mul(int a, int b) { return a * b; }
static const binop ops[] = {op_add, op_mul, helper_sub};

int main(int argc, char **argv) {
  (void)argv;
  counter += argc;
  printf("ctor=%d counter=%d\n", ctor_ran, counter);
  printf("table=%d weak=%d alias=%d\n", global_table[7], weak_hook(), aliased_impl(5));
  printf("varargs=%d\n", sum_va(5, 1, 2, 3, 4, 5));
  struct point m = mid((struct point){1, 2}, (struct point){3, 8});
  printf("mid=%.2f,%.2f hyp=%.6f\n", m.x, m.y, hypot(m.x, m.y));
  struct flags f = {5, 17, 1};
  printf("bitfields=%u %u %u size=%zu\n", f.a, f.b, f.c, sizeof f);
  for (int i = 0; i < 10; i += 3) printf("switch %d=%s\n", i, classify(i));
  int arr[] = {5, 3, 9, 1, 7};
  qsort(arr, 5, sizeof arr[0], cmp_desc);
  printf("sorted=%d %d %d %d %d\n", arr[0], arr[1], arr[2], arr[3], arr[4]);
  int j = setjmp(jb);
  if (j == 0) { for (int i = 0; i < 5; i++) jumper(i); }
  printf("longjmp=%d\n", j);
  printf("goto=%d %d %d\n", computed_goto(0), computed_goto(1), computed_goto(2));
  printf("vla=%d\n", vla_sum(argc + 9));
  unsigned __int128 big = (unsigned __int128)UINT64_MAX * 3u;
  printf("int128=%llu:%llu\n", (unsigned long long)(big >> 64), (unsigned long long)big);
  double complex z = 1.0 + 2.0 * I;
  z = z * z;
  printf("complex=%.1f%+.1fi\n", creal(z), cimag(z));
  int x = 40, y;
  __asm__("addl $2, %0" : "=r"(y) : "0"(x));
  printf("asm=%d\n", y);
  pthread_t t[4];
  int n = 1000;
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, &n);
  long tls_sum = 0;
  for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); tls_sum += (intptr_t)r; }
  printf("threads=%d tls_main=%d tls_threads=%ld\n", atomic_load(&shared_count), tls_value, tls_sum);
  for (int i = 0; i < 3; i++) printf("op%d=%d\n", i, ops[i](7, 3));
  printf("strings=%zu %s\n", strlen(helper_name()), helper_name());
  printf("static_in_other_unit=%d %d\n", helper_count(), helper_count());
  printf("float=%.9g %.9g\n", sqrt(2.0) * 1e10, (double)(float)(1.0 / 3.0));
  return counter == 1 ? 0 : 3;
}
