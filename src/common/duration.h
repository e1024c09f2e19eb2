/* SPDX-License-Identifier: MIT */
/*
 * Durations in Go's time.ParseDuration syntax, as gocryptfs's -idle takes
 * them: an optional sign, then one or more decimal numbers (with an
 * optional fraction) each followed by a unit, e.g. "90s", "1.5h", "2h45m";
 * units ns, us (or µs, μs), ms, s, m, h; "0" alone needs no unit.
 */
#ifndef COMMON_DURATION_H
#define COMMON_DURATION_H

#include <stddef.h>
#include <stdint.h>

#define DURATION_ERR_LEN 160

/* Parse s into *ns (nanoseconds, may be negative). Returns 0, or -EINVAL
 * with a one-line reason in err (as Go words it: invalid duration, missing
 * unit, unknown unit; overflow past +-292 years is invalid). */
int duration_parse(const char *s, int64_t *ns,
		   char err[static DURATION_ERR_LEN]);

#endif
