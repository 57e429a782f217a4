/* The library's version, set by the build from the CMake project version. */
#include "ftc/base.h"

const char *ftc_version(void)
{
    return FTC_VERSION_STRING;
}
