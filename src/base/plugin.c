/* Plugin loading shared by the device registry and the pg backend
 * registry (see plugin.h). */
#include "base/plugin.h"

#include <dlfcn.h>
#include <stdio.h>

#include "ftc/plugin/abi.h"

int ftc__plugin_check_abi(uint32_t abi_version, uint32_t struct_size,
                          uint32_t want, size_t first_size, char *why,
                          size_t why_size)
{
    uint32_t major = FTC_PLUGIN_ABI_MAJOR(want);
    if (FTC_PLUGIN_ABI_MAJOR(abi_version) == major &&
        struct_size >= first_size) {
        return 0;
    }
    snprintf(why, why_size,
             "has ABI version %u.%u with struct_size %u; this library "
             "needs ABI %u.x with struct_size >= %zu",
             FTC_PLUGIN_ABI_MAJOR(abi_version),
             FTC_PLUGIN_ABI_MINOR(abi_version), struct_size, major, first_size);
    return -1;
}

int ftc__plugin_open(const char *path, const char *symbol, void **handle,
                     void (**entry)(void), char *why, size_t why_size)
{
    *handle = NULL;
    *entry = NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e != NULL ? e : "dlopen failed");
        return -1;
    }
    void (*fn)(void);
    *(void **)&fn = dlsym(h, symbol);
    if (fn == NULL) {
        snprintf(why, why_size, "does not export it");
        dlclose(h);
        return -1;
    }
    *handle = h;
    *entry = fn;
    return 0;
}

void ftc__plugin_close(void *handle)
{
    if (handle != NULL) {
        dlclose(handle);
    }
}
