/* ftc.h: the whole public API of libftc. */
#ifndef FTC_FTC_H
#define FTC_FTC_H

#include "ftc/base.h"
#include "ftc/store.h"
#include "ftc/control.h"
#include "ftc/device.h"
#include "ftc/pg.h"
#include "ftc/algo.h"
#include "ftc/ft.h"

#endif
