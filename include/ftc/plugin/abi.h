/* ftc/plugin/abi.h: what every plugin table shares. A plugin is a shared
 * library the process loads with dlopen; its entry function returns a
 * table whose first two fields are
 *
 *     uint32_t abi_version;  FTC_PLUGIN_ABI(major, minor) it was built for
 *     uint32_t struct_size;  sizeof the table it was built with
 *
 * The library refuses a table whose major differs from its own or whose
 * struct_size is smaller than the first version of that table, with
 * FTC_ENOTSUP naming the library, the symbol and both versions. A newer
 * minor appends fields: an older library accepts the larger struct_size
 * and reads only the fields it knows; a newer library reads an older
 * plugin's missing fields as NULL (not supported).
 *
 * For plugin authors; ftc/ftc.h does not include the plugin headers. */
#ifndef FTC_PLUGIN_ABI_H
#define FTC_PLUGIN_ABI_H

#include <stdint.h>

#include "ftc/base.h"

/* Packs and unpacks an ABI version: major in the high 16 bits. */
#define FTC_PLUGIN_ABI(major, minor)                                           \
    ((uint32_t)(((uint32_t)(major) << 16) | ((uint32_t)(minor)&0xffffu)))
#define FTC_PLUGIN_ABI_MAJOR(version) ((uint32_t)(version) >> 16)
#define FTC_PLUGIN_ABI_MINOR(version) ((uint32_t)(version)&0xffffu)

/* Marks a plugin's entry function as exported from its shared library
 * (build plugins with -fvisibility=hidden and only the entry is seen). */
#if defined(__cplusplus)
#define FTC_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define FTC_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* A deadline passed to a plugin: absolute CLOCK_MONOTONIC nanoseconds;
 * INT64_MAX means never. */
#define FTC_PLUGIN_DEADLINE_NEVER INT64_MAX

#endif
