/* SPDX-License-Identifier: MIT */
/* Placeholder until the CLI lands (issue #3). */
#include <stdio.h>
int main(void)
{
	puts("veilfs " VEILFS_VERSION);
	return 0;
}
