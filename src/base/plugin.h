/* What every plugin loader shares (device plugins, pg backends): opening
 * a library and finding its entry function, and the ABI checks of
 * ftc/plugin/abi.h, so both loaders refuse a table for the same reasons
 * with the same words. */
#ifndef FTC_BASE_PLUGIN_H
#define FTC_BASE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

/* 0 if a table of abi_version / struct_size can be read by a library
 * whose own version is want and whose first table (x.0) ends at
 * first_size bytes; else -1 with why filled ("has ABI version 2.0 with
 * struct_size 8; this library needs ABI 1.x with struct_size >= 96"). */
int ftc__plugin_check_abi(uint32_t abi_version, uint32_t struct_size,
                          uint32_t want, size_t first_size, char *why,
                          size_t why_size);

/* dlopens path (RTLD_NOW | RTLD_LOCAL) and looks up the function symbol.
 * 0 with *handle and *entry set; -1 with why filled (dlerror's text, or
 * "does not export it") and nothing left open. */
int ftc__plugin_open(const char *path, const char *symbol, void **handle,
                     void (**entry)(void), char *why, size_t why_size);

/* dlcloses a handle from ftc__plugin_open. */
void ftc__plugin_close(void *handle);

#endif
