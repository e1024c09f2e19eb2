/* SPDX-License-Identifier: MIT */
/* Vector-reading helpers for the unit tests (see vecutil.h). */
#include "vecutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const vec_variants[] = {
	"gcm",		   "aessiv",	     "xchacha",
	"deterministic-names", "longnamemax100", "plaintextnames",
};
const size_t vec_nvariants = sizeof(vec_variants) / sizeof(vec_variants[0]);

static const char *vec_root(void)
{
	const char *p = getenv("VEILFS_VECTORS");

	return p ? p : "/nonexistent";
}

bool vec_available(void)
{
	char p[4096];
	struct stat st;

	if (vec_path(p, sizeof(p), "gcm", "vectors.txt"))
		return false;
	return stat(p, &st) == 0;
}

int vec_path(char *out, size_t cap, const char *variant, const char *rel)
{
	int n = snprintf(out, cap, "%s/%s/%s", vec_root(), variant, rel);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

uint8_t *vec_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (cap - n < 4096) {
			uint8_t *nb = realloc(buf, cap + 65536 + 1);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t vec_hex(const char *variant, const char *label, uint8_t *out,
	       size_t cap)
{
	char path[4096], *line, *save = NULL;
	uint8_t *txt;
	size_t len, n = 0;

	if (vec_path(path, sizeof(path), variant, "vectors.txt"))
		return 0;
	txt = vec_read_file(path, &len);
	if (!txt)
		return 0;
	for (line = strtok_r((char *)txt, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *v, *q;

		if (!strstr(line, label))
			continue;
		for (v = NULL, q = line; (q = strstr(q, ": ")); q += 2)
			v = q + 2;
		if (!v)
			continue;
		while (n < cap && hexval(v[0]) >= 0 && hexval(v[1]) >= 0) {
			out[n++] = (uint8_t)(hexval(v[0]) << 4 | hexval(v[1]));
			v += 2;
		}
		break;
	}
	free(txt);
	return n;
}
