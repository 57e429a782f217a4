/* Everything the base layer offers the other layers, in one include. */
#ifndef FTC_BASE_INT_H
#define FTC_BASE_INT_H

#include "base/addr.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/event.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/rand.h"
#include "base/sock.h"
#include "base/strset.h"
#include "base/thread.h"
#include "base/trace.h"

#endif
