/* XXH3 at the speed of the CPU's widest vector unit: libxxhash's plain
 * entry points are built for the baseline ISA, its _dispatch ones pick
 * SSE2, AVX2 or AVX-512 at run time (docs/decisions.md, "Healing: ..."). */
#ifndef FTC_BASE_XXH_H
#define FTC_BASE_XXH_H

#include <xxhash.h>
#ifdef FTC_HAVE_XXH_DISPATCH
/* Redefines XXH3_64bits and XXH3_64bits_update as their _dispatch forms. */
#include <xxh_x86dispatch.h>
#endif

#endif
