/* SPDX-License-Identifier: MIT */
/*
 * Process exit codes. Values equal gocryptfs's where the meaning matches
 * (spec §6.5), so scripts written for gocryptfs keep working.
 */
#ifndef SRC_EXITCODES_H
#define SRC_EXITCODES_H

enum exit_code {
	EXIT_OK = 0,
	EXIT_USAGE = 1,
	EXIT_WPANIC = 2,	/* -wpanic: a warning (Go's status after panic) */
	EXIT_CIPHERDIR = 6,	/* CIPHERDIR missing, or not empty at -init */
	EXIT_INIT = 7,
	EXIT_LOADCONF = 8,
	EXIT_READPASSWORD = 9,
	EXIT_MOUNTPOINT = 10,
	EXIT_OTHER = 11,
	EXIT_PASSWORD_INCORRECT = 12,
	EXIT_SCRYPT_PARAMS = 13,
	EXIT_MASTERKEY = 14,
	EXIT_PASSWORD_EMPTY = 22, /* unused: 2.3 exits 9 for an empty password */
	EXIT_OPENCONF = 23,
	EXIT_WRITECONF = 24,
	EXIT_FSCK = 26,
	EXIT_DEPRECATED_FS = 27,
	EXIT_EXCLUDE = 29,
	EXIT_CTLSOCK = 20,	/* cannot create the -ctlsock socket */
	EXIT_FIDO2 = 31,
};

#endif
