/* A static function with one caller that nothing in the unit calls:
   clang inlines it there (the inliner's bonus for the last call to a
   static) and drops it; through repocc it must go the same way, cold and
   warm (wrapper-tests/t-fragments.sh). Large enough that without that
   bonus it would stay a function of its own. */
#include <stdio.h>

static unsigned mix(const unsigned char *p, int n, unsigned seed) {
  unsigned h = seed;
  for (int i = 0; i < n; i++) {
    switch (p[i] % 41) {
    case 0: h = (h ^ p[i]) * 3 + 1; h ^= h >> 1; break;
    case 1: h = (h ^ p[i]) * 5 + 8; h ^= h >> 2; break;
    case 2: h = (h ^ p[i]) * 7 + 15; h ^= h >> 3; break;
    case 3: h = (h ^ p[i]) * 9 + 22; h ^= h >> 4; break;
    case 4: h = (h ^ p[i]) * 11 + 29; h ^= h >> 5; break;
    case 5: h = (h ^ p[i]) * 13 + 36; h ^= h >> 6; break;
    case 6: h = (h ^ p[i]) * 15 + 43; h ^= h >> 7; break;
    case 7: h = (h ^ p[i]) * 17 + 50; h ^= h >> 8; break;
    case 8: h = (h ^ p[i]) * 19 + 57; h ^= h >> 9; break;
    case 9: h = (h ^ p[i]) * 21 + 64; h ^= h >> 10; break;
    case 10: h = (h ^ p[i]) * 23 + 71; h ^= h >> 11; break;
    case 11: h = (h ^ p[i]) * 25 + 78; h ^= h >> 12; break;
    case 12: h = (h ^ p[i]) * 27 + 85; h ^= h >> 13; break;
    case 13: h = (h ^ p[i]) * 29 + 92; h ^= h >> 1; break;
    case 14: h = (h ^ p[i]) * 31 + 99; h ^= h >> 2; break;
    case 15: h = (h ^ p[i]) * 33 + 106; h ^= h >> 3; break;
    case 16: h = (h ^ p[i]) * 35 + 113; h ^= h >> 4; break;
    case 17: h = (h ^ p[i]) * 37 + 120; h ^= h >> 5; break;
    case 18: h = (h ^ p[i]) * 39 + 127; h ^= h >> 6; break;
    case 19: h = (h ^ p[i]) * 41 + 134; h ^= h >> 7; break;
    case 20: h = (h ^ p[i]) * 43 + 141; h ^= h >> 8; break;
    case 21: h = (h ^ p[i]) * 45 + 148; h ^= h >> 9; break;
    case 22: h = (h ^ p[i]) * 47 + 155; h ^= h >> 10; break;
    case 23: h = (h ^ p[i]) * 49 + 162; h ^= h >> 11; break;
    case 24: h = (h ^ p[i]) * 51 + 169; h ^= h >> 12; break;
    case 25: h = (h ^ p[i]) * 53 + 176; h ^= h >> 13; break;
    case 26: h = (h ^ p[i]) * 55 + 183; h ^= h >> 1; break;
    case 27: h = (h ^ p[i]) * 57 + 190; h ^= h >> 2; break;
    case 28: h = (h ^ p[i]) * 59 + 197; h ^= h >> 3; break;
    case 29: h = (h ^ p[i]) * 61 + 204; h ^= h >> 4; break;
    case 30: h = (h ^ p[i]) * 63 + 211; h ^= h >> 5; break;
    case 31: h = (h ^ p[i]) * 65 + 218; h ^= h >> 6; break;
    case 32: h = (h ^ p[i]) * 67 + 225; h ^= h >> 7; break;
    case 33: h = (h ^ p[i]) * 69 + 232; h ^= h >> 8; break;
    case 34: h = (h ^ p[i]) * 71 + 239; h ^= h >> 9; break;
    case 35: h = (h ^ p[i]) * 73 + 246; h ^= h >> 10; break;
    case 36: h = (h ^ p[i]) * 75 + 253; h ^= h >> 11; break;
    case 37: h = (h ^ p[i]) * 77 + 260; h ^= h >> 12; break;
    case 38: h = (h ^ p[i]) * 79 + 267; h ^= h >> 13; break;
    case 39: h = (h ^ p[i]) * 81 + 274; h ^= h >> 1; break;
    default: h = h * 1103515245u + 12345u; break;
    }
  }
  return h ^ (h >> 16);
}

unsigned once_api(const unsigned char *p, int n) { return mix(p, n, 7) + 1; }

#ifdef WITH_MAIN
int main(void) {
  unsigned char buf[256];
  for (int i = 0; i < 256; i++)
    buf[i] = (unsigned char)(i * 37 + 11);
  printf("%u\n", once_api(buf, 256));
  return 0;
}
#endif
