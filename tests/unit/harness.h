/* SPDX-License-Identifier: MIT */
/*
 * A tiny TAP test harness (OpenSSH test_helper style). Each test file
 * defines tests with TEST(name) { ... } and lists them in RUN_TESTS(...).
 * ASSERT* failures report file:line and fail the current test only.
 * A test may call SKIP("why") to be reported as skipped.
 */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct th_state {
	int failed;
	int skipped;
	const char *skip_why;
};
extern struct th_state th_cur;

#define TEST(name) static void name(void)

#define FAILF(...)                                                      \
	do {                                                            \
		printf("# %s:%d: ", __FILE__, __LINE__);                \
		printf(__VA_ARGS__);                                    \
		printf("\n");                                           \
		th_cur.failed = 1;                                      \
		return;                                                 \
	} while (0)

#define ASSERT(cond)                                                    \
	do {                                                            \
		if (!(cond))                                            \
			FAILF("assertion failed: %s", #cond);           \
	} while (0)

#define ASSERT_INT_EQ(a, b)                                             \
	do {                                                            \
		long long _a = (long long)(a), _b = (long long)(b);     \
		if (_a != _b)                                           \
			FAILF("%s == %lld, expected %s == %lld", #a, _a, \
			      #b, _b);                                  \
	} while (0)

#define ASSERT_MEM_EQ(a, b, n)                                          \
	do {                                                            \
		if (memcmp((a), (b), (n)) != 0)                         \
			FAILF("memory differs: %s vs %s (%zu bytes)", #a, \
			      #b, (size_t)(n));                         \
	} while (0)

#define ASSERT_STR_EQ(a, b)                                             \
	do {                                                            \
		const char *_a = (a), *_b = (b);                        \
		if (strcmp(_a, _b) != 0)                                \
			FAILF("'%s' != '%s'", _a, _b);                  \
	} while (0)

#define SKIP(why)                                                       \
	do {                                                            \
		th_cur.skipped = 1;                                     \
		th_cur.skip_why = (why);                                \
		return;                                                 \
	} while (0)

struct th_case {
	const char *name;
	void (*fn)(void);
};

#define T(fn) { #fn, fn }

/* Runs the cases, prints TAP, returns the process exit status. */
static inline int th_run(const struct th_case *cases, size_t n)
{
	int bad = 0;

	printf("1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		memset(&th_cur, 0, sizeof(th_cur));
		cases[i].fn();
		if (th_cur.skipped)
			printf("ok %zu - %s # SKIP %s\n", i + 1, cases[i].name,
			       th_cur.skip_why);
		else if (th_cur.failed)
			printf("not ok %zu - %s\n", i + 1, cases[i].name), bad++;
		else
			printf("ok %zu - %s\n", i + 1, cases[i].name);
		fflush(stdout);
	}
	return bad ? 1 : 0;
}

#define RUN_TESTS(...)                                                  \
	struct th_state th_cur;                                         \
	int main(void)                                                  \
	{                                                               \
		static const struct th_case cases[] = { __VA_ARGS__ };  \
		return th_run(cases, sizeof(cases) / sizeof(cases[0])); \
	}

/* Hex helpers for vectors. */
static inline size_t th_unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;
	while (hex[0] && hex[1] && n < cap) {
		unsigned v;
		if (sscanf(hex, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

/* Path of the extracted vectors (VEILFS_VECTORS, set by meson). */
static inline const char *th_vectors(void)
{
	const char *p = getenv("VEILFS_VECTORS");
	return p ? p : "/nonexistent";
}

#endif
