/* The same two variables as align-users.c, read one element at a time:
 * nothing here makes the optimizer want them aligned more than their
 * types need (t-warm-cold.sh). */
float tab[8] = {1, 2, 3, 4, 5, 6, 7, 8};
char buf[10];

float tab_at(int i) { return tab[i]; }
char buf_at(int i) { return buf[i]; }
