/* SPDX-License-Identifier: MIT */
/*
 * Password sources (spec §1.7): -passfile FILE (first line; repeatable, the
 * lines concatenated), -extpass CMD (first line of the command's stdout,
 * run without a shell), a terminal prompt without echo, or one line of stdin
 * when stdin is not a terminal. The password is returned in a locked buffer;
 * no normalisation is applied (no trailing '\r' is stripped).
 */
#ifndef CONFIG_PASSWORD_H
#define CONFIG_PASSWORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest accepted password (as gocryptfs). */
#define PASSWORD_MAX 2048
#define PASSWORD_ERR_LEN 512

struct password_src {
	const char *const *passfiles;	/* -passfile, in order */
	size_t npassfiles;
	const char *const *extpass;	/* -extpass arguments */
	size_t nextpass;		/* 1: split the one string on spaces */
};

struct password {
	uint8_t *buf;	/* secmem, PASSWORD_MAX + 1 bytes */
	size_t len;
};

/*
 * Read a password. With passfiles or extpass given they are used; otherwise
 * the terminal (prompt on stderr, no echo; with twice, asked again and
 * compared) or one line of stdin. prompt may be NULL ("Password: ").
 * Returns 0, -ENODATA for an empty password, -EINVAL for a password that is
 * too long or mismatched, or another negative errno when the source cannot
 * be read; err gets a one-line reason. Caller calls password_free in every
 * case.
 */
int password_read(struct password *pw, const struct password_src *src,
		  const char *prompt, bool twice,
		  char err[static PASSWORD_ERR_LEN]);
/* Wipe and release. Safe on a zeroed struct. */
void password_free(struct password *pw);

#endif
