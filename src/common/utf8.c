// SPDX-License-Identifier: MIT
/*
 * UTF-8 decoding of one sequence, strict: overlong forms, surrogates and
 * code points past U+10FFFF are invalid. Used for Go-compatible JSON
 * (fs/ctlsock.c) and for quoting names in fsck's output.
 */
#include "common/utf8.h"

size_t utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

