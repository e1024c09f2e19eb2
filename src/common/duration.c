// SPDX-License-Identifier: MIT
/*
 * Go's duration syntax (see duration.h), with Go's arithmetic: the integer
 * part is exact and overflow is an error; a fraction adds
 * (double)fraction * (unit / scale), digits past 63 bits of precision
 * being dropped, so that every string gives the value gocryptfs computes.
 */
#include "common/duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_ABS ((uint64_t)1 << 63) /* magnitude of INT64_MIN */

struct unit {
	const char *name;
	uint64_t ns;
};

static const struct unit units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "\xc2\xb5s", 1000 }, /* U+00B5 micro sign */
	{ "\xce\xbcs", 1000 }, /* U+03BC Greek small letter mu */
	{ "ms", 1000000 },
	{ "s", 1000000000 },
	{ "m", 60ull * 1000000000 },
	{ "h", 3600ull * 1000000000 },
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int invalid(char *err, const char *s)
{
	snprintf(err, DURATION_ERR_LEN, "invalid duration '%s'", s);
	return -EINVAL;
}

int duration_parse(const char *s, int64_t *ns,
		   char err[static DURATION_ERR_LEN])
{
	const char *orig = s, *p = s;
	uint64_t d = 0;
	bool neg = false;

	*ns = 0;
	err[0] = '\0';
	if (*p == '-' || *p == '+') {
		neg = *p == '-';
		p++;
	}
	if (strcmp(p, "0") == 0)
		return 0;
	if (!*p)
		return invalid(err, orig);
	while (*p) {
		uint64_t v = 0, f = 0, unit = 0;
		double scale = 1;
		bool pre, post = false, overflow = false;
		const char *start, *u;
		size_t ulen;

		if (!(*p == '.' || is_digit(*p)))
			return invalid(err, orig);
		/* integer part: exact, overflow is an error */
		start = p;
		for (; is_digit(*p); p++) {
			if (v > MAX_ABS / 10)
				return invalid(err, orig);
			v = v * 10 + (uint64_t)(*p - '0');
			if (v > MAX_ABS)
				return invalid(err, orig);
		}
		pre = p != start;
		if (*p == '.') {
			p++;
			start = p;
			for (; is_digit(*p); p++) {
				uint64_t y;

				if (overflow)
					continue;
				if (f > (MAX_ABS - 1) / 10) {
					overflow = true;
					continue;
				}
				y = f * 10 + (uint64_t)(*p - '0');
				if (y > MAX_ABS) {
					overflow = true;
					continue;
				}
				f = y;
				scale *= 10;
			}
			post = p != start;
		}
		if (!pre && !post)
			return invalid(err, orig); /* "." or ".s" */
		u = p;
		while (*p && *p != '.' && !is_digit(*p))
			p++;
		ulen = (size_t)(p - u);
		if (ulen == 0) {
			snprintf(err, DURATION_ERR_LEN,
				 "missing unit in duration '%s'", orig);
			return -EINVAL;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].name) == ulen &&
			    memcmp(units[i].name, u, ulen) == 0)
				unit = units[i].ns;
		if (!unit) {
			snprintf(err, DURATION_ERR_LEN,
				 "unknown unit '%.*s' in duration '%s'",
				 (int)ulen, u, orig);
			return -EINVAL;
		}
		if (v > MAX_ABS / unit)
			return invalid(err, orig);
		v *= unit;
		if (f > 0) {
			double add = (double)f * ((double)unit / scale);

			/* Go converts with a plain uint64(float64) */
			if (add >= 18446744073709551616.0)
				return invalid(err, orig);
			v += (uint64_t)add;
			if (v > MAX_ABS)
				return invalid(err, orig);
		}
		d += v;
		if (d > MAX_ABS)
			return invalid(err, orig);
	}
	if (neg) {
		*ns = d == MAX_ABS ? INT64_MIN : -(int64_t)d;
		return 0;
	}
	if (d > MAX_ABS - 1)
		return invalid(err, orig);
	*ns = (int64_t)d;
	return 0;
}
