// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: Go duration strings (-idle, -i). Any bytes must give
 * either a value or -EINVAL with a reason, never a crash; a value printed
 * back as a plain nanosecond count must parse to itself, and a sign in
 * front must negate it exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[DURATION_ERR_LEN], again[48], *s;
	int64_t ns, ns2;
	int rc;

	if (size > 4096)
		return 0;
	s = malloc(size + 2);
	if (!s)
		return 0;
	s[0] = '-';
	memcpy(s + 1, data, size);
	s[size + 1] = '\0';
	rc = duration_parse(s + 1, &ns, err);
	if (rc != 0 && (rc != -EINVAL || !err[0]))
		abort();
	if (rc == 0) {
		snprintf(again, sizeof(again), "%" PRId64 "ns", ns);
		if (duration_parse(again, &ns2, err) || ns2 != ns)
			abort();
		/* "-X" is -(X) unless X already carries a sign */
		if (s[1] != '-' && s[1] != '+' && ns != INT64_MIN &&
		    (duration_parse(s, &ns2, err) || ns2 != -ns))
			abort();
	}
	free(s);
	return 0;
}
