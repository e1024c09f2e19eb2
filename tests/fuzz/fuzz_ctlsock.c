// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: -ctlsock requests (src/fs/ctlsock.c). Any bytes up to
 * the request limit must give one answer line that is a JSON object with
 * exactly Result, ErrNo, ErrText and WarnText (a result only without an
 * error), and a path reaching the frontend must be canonical: no empty,
 * "." or ".." component and no slash at either end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fs/ctlsock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_path(const char *p, char **out)
{
	size_t n = strlen(p);

	if (!n || p[0] == '/' || p[n - 1] == '/' || strstr(p, "//") ||
	    !strcmp(p, ".") || !strncmp(p, "./", 2) || strstr(p, "/./") ||
	    (n >= 2 && !strcmp(p + n - 2, "/.")) || !strcmp(p, "..") ||
	    !strncmp(p, "../", 3) || strstr(p, "/../") ||
	    (n >= 3 && !strcmp(p + n - 3, "/..")))
		abort();
	if (n % 3 == 0)
		return -ENOENT;
	*out = strdup(p);
	return *out ? 0 : -ENOMEM;
}

static int enc(void *arg, const char *p, char **out)
{
	(void)arg;
	return check_path(p, out);
}

static const struct ctlsock_ops ops = { enc, enc };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *o, *v;
	size_t len;
	char *a;
	int keys = 0;

	if (size > CTLSOCK_MAX_REQ)
		return 0;
	a = ctlsock_answer(&ops, NULL, (const char *)data, size);
	if (!a)
		abort();
	len = strlen(a);
	if (len < 2 || a[len - 1] != '\n' || memchr(a, '\n', len - 1))
		abort();
	o = json_tokener_parse(a);
	if (!o || !json_object_is_type(o, json_type_object))
		abort();
	json_object_object_foreach(o, key, val)
	{
		(void)key;
		(void)val;
		keys++;
	}
	if (keys != 4 ||
	    !json_object_object_get_ex(o, "ErrNo", &v) ||
	    !json_object_is_type(v, json_type_int))
		abort();
	if (json_object_get_int(v) != 0) {
		if (!json_object_object_get_ex(o, "Result", &v) ||
		    json_object_get_string_len(v) != 0)
			abort();
	}
	json_object_put(o);
	free(a);
	return 0;
}
