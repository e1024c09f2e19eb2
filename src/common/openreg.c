/* SPDX-License-Identifier: MIT */
#include "common/openreg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int openreg_finish(int fd, int flags, struct stat *st)
{
	struct stat sb;
	int rc = 0;

	if (!st)
		st = &sb;
	if (fstat(fd, st) < 0)
		rc = -errno;
	else if (!S_ISREG(st->st_mode))
		rc = -EFTYPE_NOTREG;
	else if (!(flags & O_NONBLOCK) &&
		 fcntl(fd, F_SETFL, flags & ~O_NONBLOCK & ~O_ACCMODE) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int openreg_at(int dfd, const char *name, int flags, bool follow,
	       struct stat *st)
{
	char proc[40];
	struct stat sb, want;
	int pfd, fd, rc = 0;

	if (!st)
		st = &sb;
	/* follow decides; the open of /proc/self/fd/N follows that link */
	flags &= ~(O_CREAT | O_NOFOLLOW);
	/* O_PATH opens nothing: no driver's open runs, no FIFO waits */
	pfd = openat(dfd, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) < 0)
		rc = -errno;
	else if (!S_ISREG(st->st_mode))
		rc = -EFTYPE_NOTREG;
	if (rc) {
		close(pfd);
		return rc;
	}
	/* the very inode pfd holds, whatever the name is by now */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) /* no /proc */
		fd = openat(dfd, name, flags | O_NONBLOCK | O_NOCTTY |
				       O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	rc = fd < 0 ? -errno : 0;
	close(pfd);
	if (rc)
		return rc;
	want = *st;
	fd = openreg_finish(fd, flags, st);
	if (fd >= 0 &&
	    (st->st_dev != want.st_dev || st->st_ino != want.st_ino)) {
		close(fd); /* only without /proc: swapped meanwhile */
		return -ESTALE;
	}
	return fd;
}
