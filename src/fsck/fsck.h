/* SPDX-License-Identifier: MIT */
/*
 * Consistency check and repair of a cipherdir, without FUSE: the tree is
 * walked directly (every access relative to a parent directory fd with
 * O_NOFOLLOW, bounded fds, no recursion) and decrypted with src/crypto.
 * Output and counting follow gocryptfs 2.3 -fsck (spec §6.3): one line per
 * problem on o->out, "fsck summary: ..." is printed by the caller from the
 * result. -repair (beyond gocryptfs) fixes what can be saved and keeps a
 * copy of everything it changes in a quarantine directory outside the
 * plaintext view, with a report of every action.
 */
#ifndef FSCK_FSCK_H
#define FSCK_FSCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

struct content;
struct names;

struct fsck_opts {
	const char *cipherdir;
	bool quiet;	     /* only problems (and the caller's summary) */
	bool progress;	     /* one updating progress line on err */
	bool repair;
	bool truncate;	     /* repair: cut at the first bad block */
	const char *quarantine; /* NULL: <cipherdir>.veilfs-quarantine */
	unsigned threads;    /* file checkers; 0: online CPUs */
	FILE *out, *err;
	/* Set (to nonzero) by the caller's SIGINT handler: stop soon. */
	volatile sig_atomic_t *stop;
};

struct fsck_result {
	unsigned long corrupt;	  /* problems found (gocryptfs's count) */
	unsigned long skipped;	  /* objects that could not be checked */
	unsigned long repaired;	  /* problems repaired (-repair) */
	unsigned long unrepaired; /* problems left (-repair) */
	char *quarantine;	  /* run's quarantine dir, malloc'ed or NULL */
	char *report;		  /* its report file, malloc'ed or NULL */
};

/* Check (and with o->repair, repair) the cipherdir o->cipherdir through the
 * engines c and n (borrowed). Returns 0 when the run completed, -EINTR when
 * *o->stop was set, or another negative errno when it could not start
 * (err gets a one-line reason). r is filled in every case; release it
 * with fsck_result_fini. */
int fsck_run(const struct fsck_opts *o, struct content *c, struct names *n,
	     struct fsck_result *r, char *err, size_t errlen);
void fsck_result_fini(struct fsck_result *r);

#endif
