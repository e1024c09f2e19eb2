// SPDX-License-Identifier: MIT
/*
 * -speed: benchmark every content-cipher implementation (src/crypto/speed.c
 * prints the table) and show which one auto mode selects.
 */
#include <stdio.h>
#include <string.h>

#include "cli/actions.h"
#include "cli/common.h"
#include "crypto/speed.h"
#include "exitcodes.h"

int cli_speed(const struct args *a)
{
	int rc;

	(void)a;
	rc = speed_run(stdout);
	fflush(stdout);
	if (rc) {
		cli_err("-speed: an implementation failed: %s", strerror(-rc));
		return EXIT_OTHER;
	}
	return EXIT_OK;
}
