// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: gocryptfs.conf parsing and validation (src/config/conf.c)
 * on arbitrary bytes (not NUL-terminated). Besides memory errors it checks
 * that the result is one of the documented ones, that an error message is
 * always a terminated string, and that a config which parses and validates
 * serialises to text that parses again to the very same serialisation
 * (load -> save -> load is stable).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf c, c2;
	char err[CONF_ERR_LEN];
	char *j1 = NULL, *j2 = NULL;
	int rc;

	conf_init(&c);
	conf_init(&c2);
	memset(err, 'x', sizeof(err));
	rc = conf_parse(&c, (const char *)data, size, err);
	if (rc != 0) {
		if (rc != -EINVAL && rc != -EPROTO)
			abort();
		if (!memchr(err, '\0', sizeof(err)))
			abort();
		goto out;
	}
	if (conf_validate(&c, err) != 0)
		abort(); /* conf_parse promised a validated config */
	(void)conf_validate_unlock(&c, err);
	(void)conf_cipher(&c);
	(void)conf_logn(&c);
	j1 = conf_to_json(&c);
	if (!j1)
		goto out;
	memset(err, 'x', sizeof(err));
	if (conf_parse(&c2, j1, strlen(j1), err) != 0)
		abort(); /* our own output must load */
	j2 = conf_to_json(&c2);
	if (!j2 || strcmp(j1, j2) != 0)
		abort(); /* and serialise identically */
out:
	free(j1);
	free(j2);
	conf_fini(&c);
	conf_fini(&c2);
	return 0;
}
