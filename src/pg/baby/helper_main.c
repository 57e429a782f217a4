/* ftc-baby: the child process of a Baby process group (src/pg/baby/).
 * libftc starts it with its socket as descriptor 3; run by hand it has
 * nothing to serve and exits with status 2. */
#include "pg/baby/baby.h"

int main(void)
{
    return ftc__baby_child_main();
}
