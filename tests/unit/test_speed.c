/* SPDX-License-Identifier: MIT */
/*
 * The -speed report: its shape (CPU line, one row per implementation with a
 * positive figure, exactly one auto-mode mark per cipher, a parallel row per
 * cipher, the -init line) and the -init cipher choice. Figures themselves
 * are never asserted.
 */
#include "crypto/aead.h"
#include "crypto/speed.h"
#include "harness.h"

TEST(speed_report_shape)
{
	char buf[8192], *line, *save = NULL;
	size_t marks[AEAD_CIPHER_COUNT] = { 0 }, rows = 0, par = 0, n;
	bool cpu = false, init = false;
	FILE *f = tmpfile();

	ASSERT(f);
	ASSERT_INT_EQ(speed_run(f), 0);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (size_t i = 0, bol = 1; i < n; i++) { /* as TAP comments */
		if (bol)
			fputs("# ", stdout);
		putchar(buf[i]);
		bol = buf[i] == '\n';
	}
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "cpu: ", 5)) {
			cpu = true;
			continue;
		}
		if (!strncmp(line, "-init would use ", 16)) {
			init = !strcmp(line + 16, "AES-GCM-256") ||
			       !strcmp(line + 16, "XChaCha20-Poly1305");
			continue;
		}
		if (strstr(line, " parallel (")) {
			par++;
			continue;
		}
		for (size_t k = 0; k < aead_impl_count(); k++) {
			const struct aead_impl *im = aead_impl_at(k);
			size_t l = strlen(aead_impl_name(im));

			if (strncmp(line, aead_impl_name(im), l) ||
			    line[l] != ' ')
				continue;
			rows++;
			ASSERT(strtod(line + l, NULL) > 0);
			if (strstr(line, "(selected in auto mode)"))
				marks[aead_impl_cipher(im)]++;
		}
	}
	ASSERT(cpu);
	ASSERT(init);
	ASSERT_INT_EQ(rows, aead_impl_count());
	ASSERT_INT_EQ(par, AEAD_CIPHER_COUNT);
	for (int c = 0; c < AEAD_CIPHER_COUNT; c++)
		ASSERT_INT_EQ(marks[c], 1);
}

TEST(pick_cipher)
{
	double g = 0, x = 0;
	enum aead_cipher c = speed_pick_cipher(100, &g, &x);

	printf("# AES-GCM-256 %.0f MB/s, XChaCha20-Poly1305 %.0f MB/s\n", g, x);
	ASSERT(g > 0 && x > 0);
	ASSERT_INT_EQ(c, x > g ? AEAD_XCHACHA20_POLY1305 : AEAD_AES_GCM_256);
}

RUN_TESTS(T(speed_report_shape), T(pick_cipher))
