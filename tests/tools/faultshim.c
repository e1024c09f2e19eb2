// SPDX-License-Identifier: MIT
/*
 * faultshim: an LD_PRELOAD library that makes one backing syscall of the
 * daemon fail on demand, for tests of error paths a real disk cannot be
 * made to take at the right moment. It acts only while
 * VEILFS_FAULT_DIR names a directory, and then once per control file
 * found there (the file is removed when used):
 *   pread   the next pread of 1..4200 bytes at an offset > 0 fails, EIO
 *           (a block's ciphertext, never a file header);
 *   pwrite  the next pwrite of 64 KiB or more fails, ENOSPC;
 *   pwrite_small  the next pwrite of 1..4200 bytes at an offset > 0 (a
 *           block's ciphertext, never a file header) fails, ENOSPC;
 *   delay   the next pwrite of 64 KiB or more waits 300 ms first.
 * Every failure it makes is written to stderr ("faultshim: ...").
 * And while VEILFS_FAULT_GETDENTS is set, every getdents64 of a directory
 * whose path ends in "/" and that value fails, EIO (a directory a disk or
 * a network filesystem cannot list).
 */
/* Both the 32-bit-offset names and the 64-bit ones are defined here. */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int take(const char *what)
{
	const char *dir = getenv("VEILFS_FAULT_DIR");
	char path[4096];

	if (!dir)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, what);
	return unlink(path) == 0;
}

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static ssize_t fault_pread(const char *sym, int fd, void *buf, size_t n,
			   off_t off)
{
	pread_fn real = (pread_fn)dlsym(RTLD_NEXT, sym);

	if (off > 0 && n > 0 && n <= 4200 && take("pread")) {
		fprintf(stderr, "faultshim: pread(%d, %zu, %lld): EIO\n", fd,
			n, (long long)off);
		errno = EIO;
		return -1;
	}
	return real(fd, buf, n, off);
}

static ssize_t fault_pwrite(const char *sym, int fd, const void *buf,
			    size_t n, off_t off)
{
	pwrite_fn real = (pwrite_fn)dlsym(RTLD_NEXT, sym);

	if ((n >= 65536 && take("pwrite")) ||
	    (off > 0 && n > 0 && n <= 4200 && take("pwrite_small"))) {
		fprintf(stderr, "faultshim: pwrite(%d, %zu, %lld): ENOSPC\n",
			fd, n, (long long)off);
		errno = ENOSPC;
		return -1;
	}
	if (n >= 65536 && take("delay")) {
		fprintf(stderr, "faultshim: pwrite(%d, %zu, %lld): delayed\n",
			fd, n, (long long)off);
		usleep(300000);
	}
	return real(fd, buf, n, off);
}

ssize_t getdents64(int fd, void *buf, size_t n)
{
	typedef ssize_t (*getdents_fn)(int, void *, size_t);
	getdents_fn real = (getdents_fn)dlsym(RTLD_NEXT, "getdents64");
	const char *bad = getenv("VEILFS_FAULT_GETDENTS");
	char proc[64], path[4096];
	size_t bl = bad ? strlen(bad) : 0;
	ssize_t l;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	l = bl ? readlink(proc, path, sizeof(path) - 1) : -1;
	if (l > (ssize_t)bl && path[l - (ssize_t)bl - 1] == '/' &&
	    !memcmp(path + l - bl, bad, bl)) {
		fprintf(stderr, "faultshim: getdents64(%d): EIO\n", fd);
		errno = EIO;
		return -1;
	}
	return real(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return fault_pread("pread", fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	return fault_pread("pread64", fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return fault_pwrite("pwrite", fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return fault_pwrite("pwrite64", fd, buf, n, off);
}
