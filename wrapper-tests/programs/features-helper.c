#include "features.h"
static int counter = 100;  /* same name as a static in features.c */
int helper_sub(int a, int b) { return a - b; }
const char *helper_name(void) { return "helper unit"; }
int helper_count(void) { return ++counter; }
int weak_hook(void) { return 99; }  /* overrides the weak definition */
