int helper_sub(int a, int b);
const char *helper_name(void);
int helper_count(void);
