// SPDX-License-Identifier: MIT
/*
 * -sharedstorage: several mounts (on one host or several) use one cipherdir
 * at once. They coordinate through OFD byte-range locks on the backing file
 * (whole file: length 0, to infinity):
 *  - a write that stays inside the file (it changes no size) holds the
 *    header [0, 18) shared, so that no truncate, append or header creation
 *    runs meanwhile, and its ciphertext blocks exclusive: writers of other
 *    blocks go on in parallel, a read-modify-write of one block is never
 *    interleaved with another;
 *  - a write that creates the header, extends the file or appends, and
 *    every truncate and fallocate, hold the whole file exclusive, so that
 *    the size it reads and the blocks it writes belong together (two
 *    appenders never write at the same offset; of two mounts creating the
 *    first block of a new file, the second sees the first one's header);
 *  - a read takes no lock; one that fails to authenticate (it met a block
 *    being rewritten, or a file ID that changed) is retried once under a
 *    shared lock on the whole file (file.c).
 * Once a lock is held, the size is asked of the backing filesystem instead
 * of its attribute cache and the cached pages about to be read (header,
 * partial blocks, the last block) are dropped, so that a network backing
 * fetches what another host wrote; file.c reads the file ID anew, and
 * before a change lets its lock go, flushes the backing file as a close
 * would (MooseFS and sshfs keep writes back until then), so that the next
 * holder, wherever it runs, reads what was written. Locks are
 * taken only under the inode's rw held for writing, so the threads of this
 * process never mix their locks on the one shared backing fd. A lock is
 * waited for 10 s at most (ofd_lock): anyone who can read the cipherdir
 * can hold read locks on its files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/openreg.h"
#include "fs/inode.h"
#include "fs/shared.h"

#define HL CONTENT_HEADER_LEN
#define PBS CONTENT_PLAIN_BS

/* A backing filesystem without byte-range locks (the mount said so, see
 * shared_probe): go on without them. */
static bool no_locks(int err)
{
	return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS ||
	       err == EINVAL;
}

/* How long a lock is waited for. Another mount holds one for a write and
 * a flush of the backing file; one held longer is someone else's: anyone
 * who can read the cipherdir can take read locks on its files, and keep
 * them. Past that, the change goes on without the lock (gocryptfs takes
 * none), with a line in the log, rather than holding a worker thread and
 * the inode for as long as the other holds on. */
#define LOCK_WAIT_MS 10000
#define LOCK_PAUSE_MAX_MS 50

static int ofd_lock(int fd, short type, uint64_t start, uint64_t len)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)start,
		.l_len = (off_t)len,
	};
	unsigned waited = 0, pause = 1;
	struct timespec ts;

	while (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EACCES)
			return no_locks(errno) ? 0 : -errno;
		if (waited >= LOCK_WAIT_MS) {
			log_warn("-sharedstorage: a byte-range lock on a "
				 "backing file was held by another for %u s: "
				 "going on without it", LOCK_WAIT_MS / 1000);
			return 0;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (long)pause * 1000000L;
		nanosleep(&ts, NULL);
		waited += pause;
		if (pause < LOCK_PAUSE_MAX_MS)
			pause *= 2;
	}
	return 0;
}

void shared_unlock(int fd)
{
	ofd_lock(fd, F_UNLCK, 0, 0);
}

/* The size as the backing filesystem has it now: AT_STATX_FORCE_SYNC makes
 * FUSE and NFS ask their server, and refreshes what a later fstat sees. */
static int fresh_size(int fd, uint64_t *csize)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_SIZE,
		  &stx) < 0) {
		struct stat st;

		if (fstat(fd, &st) < 0)
			return -errno;
		*csize = (uint64_t)st.st_size;
		return 0;
	}
	*csize = stx.stx_size;
	return 0;
}

/* Drop cached clean pages of [off, off+len) (len 0: to the end), so that
 * the next read goes to the backing filesystem's server. */
static void drop_cache(int fd, uint64_t off, uint64_t len)
{
	posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* Drop what a change of the whole file reads: the header, the blocks of
 * [lo, hi) and the last block. */
static void drop_whole(struct fs *fs, int fd, uint64_t lo, uint64_t hi,
		       uint64_t csize)
{
	uint64_t S = content_cipher_to_plain_size(fs->content, csize, NULL);
	uint64_t last = S ? content_block_cipher_off(fs->content,
						     (S - 1) / PBS) : 0;

	drop_cache(fd, 0, HL);
	if (hi > lo)
		drop_cache(fd, lo, hi - lo);
	drop_cache(fd, last, 0);
}

int shared_lock_whole(struct fs *fs, int fd, bool write, uint64_t off)
{
	uint64_t csize;
	int rc;

	rc = ofd_lock(fd, write ? F_WRLCK : F_RDLCK, 0, 0);
	if (rc)
		return rc;
	rc = fresh_size(fd, &csize);
	if (rc) {
		shared_unlock(fd);
		return rc;
	}
	drop_whole(fs, fd, content_block_cipher_off(fs->content, off / PBS),
		   csize, csize);
	return 0;
}

int shared_lock_write(struct fs *fs, int fd, uint64_t off, size_t len,
		      bool append)
{
	uint64_t lo, hi, csize = 0, S;
	int rc;

	lo = content_block_cipher_off(fs->content, off / PBS);
	hi = content_block_cipher_off(fs->content, (off + len - 1) / PBS + 1);
	if (append)
		goto whole;
	rc = ofd_lock(fd, F_RDLCK, 0, HL);
	if (!rc)
		rc = ofd_lock(fd, F_WRLCK, lo, hi - lo);
	if (!rc)
		rc = fresh_size(fd, &csize);
	if (rc) {
		shared_unlock(fd);
		return rc;
	}
	S = content_cipher_to_plain_size(fs->content, csize, NULL);
	if (csize > HL && off + len <= S) {
		drop_cache(fd, 0, HL);
		drop_cache(fd, lo, hi - lo);
		return 0;
	}
	/* It changes the size: never upgrade in place (two mounts doing so
	 * would wait for each other forever), start over. */
	shared_unlock(fd);
whole:
	rc = ofd_lock(fd, F_WRLCK, 0, 0);
	if (!rc)
		rc = fresh_size(fd, &csize);
	if (rc) {
		shared_unlock(fd);
		return rc;
	}
	drop_whole(fs, fd, lo, hi, csize);
	return 0;
}

/* The filesystem type of the mount holding dev, from mountinfo ("fuse.sshfs",
 * "nfs4", ...). */
static int fstype_of(dev_t dev, char *out, size_t cap)
{
	char *line = NULL, want[64];
	size_t len = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "%u:%u", major(dev), minor(dev));
	while (getline(&line, &len, f) > 0) { /* whole lines, however long */
		char *save = NULL, *tok, *sep;
		int i;

		tok = strtok_r(line, " ", &save);
		for (i = 0; tok && i < 2; i++)
			tok = strtok_r(NULL, " ", &save);
		if (!tok || strcmp(tok, want))
			continue;
		/* optional fields end with "-", then the type */
		sep = strstr(save, " - ");
		if (!sep)
			continue;
		tok = strtok_r(sep + 3, " ", &save);
		if (tok && strlen(tok) < cap) {
			strcpy(out, tok);
			rc = 0;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

void shared_probe(struct fs *fs)
{
	static const char *const probe[] = { "gocryptfs.conf",
					     "gocryptfs.diriv" };
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
			    .l_len = 1 };
	char type[64] = "";
	struct stat st;
	size_t i;
	int fd = -1, err = 0;

	for (i = 0; i < sizeof(probe) / sizeof(probe[0]) && fd < 0; i++)
		fd = openreg_at(fs->root_fd, probe[i], O_RDONLY, false, NULL);
	if (fd >= 0) {
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
			err = errno;
		fl.l_type = F_UNLCK;
		fcntl(fd, F_OFD_SETLK, &fl);
		close(fd);
	}
	if (fstat(fs->root_fd, &st) == 0)
		fstype_of(st.st_dev, type, sizeof(type));
	if (err && err != EAGAIN)
		log_warn("-sharedstorage: the backing filesystem%s%s has no "
			 "working byte-range locks (%s): writers on other "
			 "mounts can corrupt files", *type ? " " : "", type,
			 strerror(err));
	else if (!strcmp(type, "fuse.sshfs"))
		log_warn("-sharedstorage: byte-range locks on sshfs hold only "
			 "within one sshfs mount: writers through other sshfs "
			 "mounts can corrupt files");
}
