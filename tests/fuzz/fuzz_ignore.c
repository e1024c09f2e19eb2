// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: exclusion patterns (-exclude-from files, common/ignore.h).
 * The input is a pattern text, a NUL byte, then NUL-separated paths. Every
 * text must parse without crashing, every match must end quickly (the NFA
 * has no backtracking), and matching must be a pure function: asking twice
 * gives the same answer, and a list of one line plus its own negation
 * excludes nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *p, *end = text + size;
	const char *nul = memchr(text, '\0', size);
	size_t tlen = nul ? (size_t)(nul - text) : size;
	struct ignore *ig = NULL, *neg = NULL;

	if (ignore_new(&ig) || ignore_new(&neg))
		abort();
	if (ignore_add_text(ig, text, tlen) == 0 && tlen &&
	    tlen < IGNORE_LINE_MAX && !memchr(text, '\n', tlen) &&
	    text[0] != '!' && text[0] != '#' && text[0] != ' ') {
		/* the line, then "!line": nothing stays excluded */
		char *n = malloc(tlen + 2);

		if (!n)
			abort();
		n[0] = '!';
		memcpy(n + 1, text, tlen);
		if (ignore_add(neg, text, tlen) || ignore_add(neg, n, tlen + 1))
			abort();
		free(n);
	}
	for (p = nul ? nul + 1 : end; p < end;) {
		const char *q = memchr(p, '\0', (size_t)(end - p));
		size_t len = q ? (size_t)(q - p) : (size_t)(end - p);
		bool a = ignore_match(ig, p, len);

		if (a != ignore_match(ig, p, len))
			abort();
		if (ignore_match(neg, p, len))
			abort();
		p += len + 1;
	}
	ignore_free(ig);
	ignore_free(neg);
	return 0;
}
