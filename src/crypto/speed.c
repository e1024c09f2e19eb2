/* SPDX-License-Identifier: MIT */
/*
 * -speed: single-thread throughput of every implementation (thread CPU
 * time, so that other processes on the machine disturb it little), three
 * alternating rounds per row and the median reported, then the parallel
 * batch path of each cipher's fastest implementation (wall time). Each
 * measurement is also capped at twice its time in wall-clock time, which
 * keeps the whole run under 3 s on a loaded machine.
 */
#include "crypto/speed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 3
#define ROUND_MS 50	/* per implementation and round */
#define PAR_MS 120	/* per parallel row */
#define PAR_BLOCKS 256	/* 1 MiB batches */
#define BS 4096

static double median3(const double v[ROUNDS])
{
	double a = v[0], b = v[1], c = v[2];

	if ((a <= b && b <= c) || (c <= b && b <= a))
		return b;
	if ((b <= a && a <= c) || (c <= a && a <= b))
		return a;
	return c;
}

static bool has_flag(const char *flags, const char *f)
{
	size_t n = strlen(f);

	for (const char *p = flags; (p = strstr(p, f)); p += n)
		if ((p == flags || p[-1] == ' ') &&
		    (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
			return true;
	return false;
}

static void print_cpu(FILE *out)
{
	static const char *const want[][2] = {
		{ "aes", "AES" },     { "pclmulqdq", "PCLMUL" },
		{ "avx2", "AVX2" },   { "vaes", "VAES" },
		{ "vpclmulqdq", "VPCLMULQDQ" }, { "avx512f", "AVX512F" },
		{ "avx512ifma", "AVX512IFMA" },
	};
	char line[8192], model[256] = "unknown", flags[8192] = "";
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		v += 2;
		if (!strncmp(line, "model name", 10) && model[0] == 'u')
			snprintf(model, sizeof(model), "%.*s",
				 (int)strcspn(v, "\n"), v);
		else if (!strncmp(line, "flags", 5) && !flags[0])
			snprintf(flags, sizeof(flags), "%s", v);
	}
	if (f)
		fclose(f);
	fprintf(out, "cpu: %s; flags:", model);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (has_flag(flags, want[i][0]))
			fprintf(out, " %s", want[i][1]);
	fprintf(out, "\n");
}

/* MB/s of impl k's rows: ROUNDS alternating rounds over all of them. */
static int bench_all(double *mbs, size_t n, const bool *use, unsigned ms)
{
	double r[ROUNDS][16];
	int rc = 0;

	for (int round = 0; round < ROUNDS; round++)
		for (size_t k = 0; k < n; k++)
			if (use[k] && aead_impl_bench(aead_impl_at_all(k), ms,
						      &r[round][k]))
				rc = -EIO, r[round][k] = 0;
	for (size_t k = 0; k < n; k++) {
		double v[ROUNDS];

		for (int round = 0; round < ROUNDS; round++)
			v[round] = use[k] ? r[round][k] : 0;
		mbs[k] = median3(v);
	}
	return rc;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall-clock MB/s of 1 MiB batches through aead_seal_blocks. */
static int bench_parallel(const struct aead_impl *im, unsigned ms, double *mbs)
{
	size_t kl = aead_cipher_key_len(aead_impl_cipher(im));
	const size_t len = PAR_BLOCKS * BS;
	uint8_t key[AEAD_MAX_KEY_LEN] = { 7 }, fid[16] = { 1 };
	uint8_t *pt = NULL, *ct = NULL;
	struct aead *a = NULL;
	double t0, el = 0;
	size_t done = 0;
	int rc;

	*mbs = 0;
	rc = aead_new(&a, im, key, kl);
	if (rc)
		return rc;
	rc = -ENOMEM;
	pt = calloc(1, len);
	ct = malloc(len + PAR_BLOCKS * (AEAD_MAX_NONCE_LEN + AEAD_TAG_LEN));
	if (!pt || !ct)
		goto out;
	/* warm up: starts the pool and every worker's context */
	rc = aead_seal_blocks(a, ct, pt, len, BS, 0, fid, NULL);
	t0 = wall();
	while (!rc && el * 1000 < ms) {
		rc = aead_seal_blocks(a, ct, pt, len, BS, done / BS, fid, NULL);
		done += len;
		el = wall() - t0;
	}
	if (!rc)
		*mbs = (double)done / el / 1e6;
out:
	free(pt);
	free(ct);
	aead_free(a);
	return rc;
}

/* The name of the parallel row of impl. */
static void parallel_name(char *out, size_t cap, const struct aead_impl *impl)
{
	snprintf(out, cap, "%s parallel (%u threads)", aead_impl_name(impl),
		 aead_get_threads());
}

/* One column for every row name, the parallel rows' included. */
static int name_width(size_t n)
{
	char name[96];
	size_t w = 0;

	for (size_t k = 0; k < n; k++) {
		const struct aead_impl *im = aead_impl_at_all(k);

		parallel_name(name, sizeof(name), im);
		if (strlen(name) > w)
			w = strlen(name);
	}
	return (int)w;
}

int speed_run(FILE *out)
{
	size_t n = aead_impl_count_all(), best[AEAD_CIPHER_COUNT];
	double mbs[16], par;
	bool use[16];
	int rc, c, w;

	if (n > 16)
		n = 16;
	w = name_width(n);
	print_cpu(out);
	for (size_t k = 0; k < n; k++)
		use[k] = aead_impl_supported(aead_impl_at_all(k), NULL);
	rc = bench_all(mbs, n, use, ROUND_MS);
	for (c = 0; c < AEAD_CIPHER_COUNT; c++) {
		best[c] = n;
		for (size_t k = 0; k < n; k++) {
			if ((int)aead_impl_cipher(aead_impl_at_all(k)) != c ||
			    mbs[k] <= 0)
				continue;
			if (best[c] == n || mbs[k] > mbs[best[c]])
				best[c] = k;
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct aead_impl *im = aead_impl_at_all(k);
		const char *needs;

		if (!aead_impl_supported(im, &needs)) {
			fprintf(out, "%-*s      n/a (needs %s)\n", w,
				aead_impl_name(im), needs);
			continue;
		}
		fprintf(out, "%-*s %8.2f MB/s%s\n", w, aead_impl_name(im),
			mbs[k],
			best[aead_impl_cipher(im)] == k ?
				"  (selected in auto mode)" : "");
	}
	for (c = 0; c < AEAD_CIPHER_COUNT; c++) {
		char name[96];

		if (best[c] == n)
			continue;
		if (bench_parallel(aead_impl_at_all(best[c]), PAR_MS, &par))
			rc = -EIO;
		parallel_name(name, sizeof(name), aead_impl_at_all(best[c]));
		fprintf(out, "%-*s %8.2f MB/s\n", w, name, par);
	}
	if (best[AEAD_AES_GCM_256] != n || best[AEAD_XCHACHA20_POLY1305] != n) {
		double g = best[AEAD_AES_GCM_256] != n ?
				   mbs[best[AEAD_AES_GCM_256]] : 0;
		double x = best[AEAD_XCHACHA20_POLY1305] != n ?
				   mbs[best[AEAD_XCHACHA20_POLY1305]] : 0;

		fprintf(out, "-init would use %s\n",
			aead_cipher_name(x > g ? AEAD_XCHACHA20_POLY1305 :
						 AEAD_AES_GCM_256));
	}
	return rc;
}

enum aead_cipher speed_pick_cipher(unsigned budget_ms, double *gcm,
				   double *xchacha)
{
	size_t n = aead_impl_count_all(), k, count = 0;
	double mbs[16], g = 0, x = 0;
	bool use[16];

	if (n > 16)
		n = 16;
	if (budget_ms == 0)
		budget_ms = 200;
	if (budget_ms > 500)
		budget_ms = 500;
	for (k = 0; k < n; k++) {
		enum aead_cipher c = aead_impl_cipher(aead_impl_at_all(k));

		use[k] = (c == AEAD_AES_GCM_256 ||
			  c == AEAD_XCHACHA20_POLY1305) &&
			 aead_impl_supported(aead_impl_at_all(k), NULL);
		count += use[k];
	}
	if (count)
		bench_all(mbs, n, use,
			  budget_ms / (2 * ROUNDS * (unsigned)count) + 1);
	for (k = 0; k < n; k++) {
		enum aead_cipher c = aead_impl_cipher(aead_impl_at_all(k));

		if (use[k] && c == AEAD_AES_GCM_256 && mbs[k] > g)
			g = mbs[k];
		if (use[k] && c == AEAD_XCHACHA20_POLY1305 && mbs[k] > x)
			x = mbs[k];
	}
	if (gcm)
		*gcm = g;
	if (xchacha)
		*xchacha = x;
	return x > g ? AEAD_XCHACHA20_POLY1305 : AEAD_AES_GCM_256;
}
