/* SPDX-License-Identifier: MIT */
/*
 * Opening a file that must be a regular one, when whoever can write the
 * directory may have put something else there: a FIFO (an open would wait
 * for a writer), or a device node (the driver's open runs, and some act on
 * open: a pty is allocated, a tape rewinds, a watchdog arms). Nothing but
 * a regular file is opened, not even for a moment.
 */
#ifndef COMMON_OPENREG_H
#define COMMON_OPENREG_H

#include <stdbool.h>
#include <sys/stat.h>

/* Open name in dfd (AT_FDCWD: a path) with flags (O_RDONLY, O_RDWR, ...;
 * never O_CREAT) | O_CLOEXEC | O_NOCTTY, only if it is a regular file:
 * an O_PATH descriptor is checked with fstat and the file opened through
 * it (/proc/self/fd/N), so the file opened is the one checked; without
 * /proc, by name with O_NONBLOCK and checked again. follow: whether a
 * symlink as the last component is followed (else O_NOFOLLOW: ELOOP).
 * st (may be NULL) gets its stat. Returns the fd (without O_NONBLOCK
 * unless flags has it), -EFTYPE_NOTREG when it is not a regular file
 * (st filled in), or another negative errno. */
#define EFTYPE_NOTREG 1001
int openreg_at(int dfd, const char *name, int flags, bool follow,
	       struct stat *st);

/* The check of an fd opened with O_NONBLOCK: fstat into st (may be NULL),
 * -EFTYPE_NOTREG unless a regular file, O_NONBLOCK cleared unless flags
 * has it. Returns fd, or a negative errno with fd closed. (For opens by
 * name where a lookup has just seen a regular file: a race could still
 * open something else once.) */
int openreg_finish(int fd, int flags, struct stat *st);

#endif
