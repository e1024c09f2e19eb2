/* SPDX-License-Identifier: MIT */
/*
 * Go duration syntax (-idle): the values Go's time.ParseDuration gives,
 * including fractions, signs, the micro signs, unit sums, and the strings
 * it refuses (no unit, unknown unit, lone dot, overflow).
 */
#include "common/duration.h"
#include "harness.h"

#include <errno.h>

#define S 1000000000LL

TEST(values)
{
	static const struct {
		const char *in;
		int64_t ns;
	} ok[] = {
		{ "0", 0 },
		{ "+0", 0 },
		{ "-0", 0 },
		{ "0s", 0 },
		{ "5s", 5 * S },
		{ "90s", 90 * S },
		{ "2h45m", (2 * 3600 + 45 * 60) * S },
		{ "1h2m3s4ms5us6ns", 3723 * S + 4005006 },
		{ "1.5h", 5400 * S },
		{ ".5s", S / 2 },
		{ "1.s", S },
		{ "2s.5s", 2 * S + S / 2 },
		{ "-1.5s", -(S + S / 2) },
		{ "+2m", 120 * S },
		{ "1us", 1000 },
		{ "1\xc2\xb5s", 1000 },
		{ "1\xce\xbcs", 1000 },
		{ "100ms", 100000000 },
		{ "0.000000001s", 1 },
		{ "0.0000000001s", 0 },	/* below a nanosecond */
		{ "1.0000000000000000000000000001s", S },
		{ "9223372036854775807ns", INT64_MAX },
		{ "-9223372036854775808ns", INT64_MIN },
		{ "2562047h", 2562047LL * 3600 * S },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char err[DURATION_ERR_LEN];
		int64_t ns = -1;
		int rc = duration_parse(ok[i].in, &ns, err);

		if (rc || ns != ok[i].ns)
			FAILF("'%s': rc %d ns %lld (%s), want %lld", ok[i].in,
			      rc, (long long)ns, err, (long long)ok[i].ns);
	}
}

TEST(refused)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "invalid duration" },
		{ "-", "invalid duration" },
		{ "5", "missing unit" },
		{ "5s3", "missing unit" },
		{ "s", "invalid duration" },
		{ ".", "invalid duration" },
		{ ".s", "invalid duration" },
		{ "1e3s", "unknown unit 'e'" },
		{ "3 s", "unknown unit ' s'" },
		{ "3sec", "unknown unit 'sec'" },
		{ "1d", "unknown unit 'd'" },
		{ "--5s", "invalid duration" },
		{ "5s-", "unknown unit 's-'" },
		{ "9223372036854775808ns", "invalid duration" },
		{ "9223372036854775807s", "invalid duration" },
		{ "2562048h", "invalid duration" },
		{ "99999999999999999999ns", "invalid duration" },
		{ "9223372036854775807ns1ns", "invalid duration" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[DURATION_ERR_LEN];
		int64_t ns = 7;
		int rc = duration_parse(bad[i].in, &ns, err);

		if (rc != -EINVAL || !strstr(err, bad[i].why) || ns != 0)
			FAILF("'%s': rc %d ns %lld err '%s', want '%s'",
			      bad[i].in, rc, (long long)ns, err, bad[i].why);
	}
}

RUN_TESTS(T(values), T(refused))
