// SPDX-License-Identifier: MIT
/*
 * Reading ahead across the files of a directory. The prefetch at an open
 * (file.c file_prefetch) overlaps a file's first disk read with one round
 * trip; a program reading a tree file by file still waits for the disk at
 * each file: for its inode at the LOOKUP, for its data at the READ. When
 * two opens for reading in a row are of files of the same directory, a
 * background thread walks that backing directory from the second file on
 * (in the backing's listing order: the order in which find, tar, cp and
 * rsync see the mount's entries) and, for up to AHEAD_FILES regular files
 * and AHEAD_BYTES, opens each and asks for its first FILE_PREFETCH_BYTES
 * (POSIX_FADV_WILLNEED: submitted, not waited for), so that the disk
 * reads the next files' inodes and first blocks while the program still
 * works on this one. Every AHEAD_FILES / 2 further opens in the directory
 * start the next stretch. Only on disks (fs->disk). Nothing here is
 * waited for by a request: a job replaces the one not yet started, and
 * the thread stops a stretch when a newer job comes.
 *
 * Safety: the directory is reached through an fd of its own taken from
 * the directory-fd cache, every entry relative to it, first as a path only
 * (O_PATH | O_NOFOLLOW) and opened for reading only once fstat says it is
 * a regular file (openreg_at); at most AHEAD_SCAN entries of a directory
 * are looked at per job, so a huge or hostile directory costs a bounded
 * amount of work.
 */
#include "fs/ahead.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/openreg.h"
#include "common/thread.h"
#include "crypto/names.h"
#include "fs/file.h"
#include "fs/inode.h"

#define AHEAD_FILES 64
#define AHEAD_BYTES (16u << 20)
#define AHEAD_SCAN 4096

struct ahead {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started, stop;
	/* the run of opens: the directory and file of the last one */
	dev_t dir_dev;
	ino_t dir_ino, file_ino;
	unsigned run;
	/* the job: a directory fd of its own and the stored name to start
	 * after; -1: none. Replaced by a newer job before it starts. */
	int job_fd;
	char job_after[INODE_NAME_MAX];
	bool job_root;
	unsigned long jobs; /* bumped per job: a stretch stops on a newer */
	unsigned long files; /* prefetched, for -d */
};

static struct ahead g_ahead = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.job_fd = -1,
};

/* Prefetch the files of the directory dfd after the entry named after
 * (none: from the start), until the caps or a newer job. */
static void stretch(struct fs *fs, int dfd, const char *after, bool root,
		    unsigned long job)
{
	struct stat st;
	struct dirent *e;
	unsigned files = 0, seen = 0;
	uint64_t bytes = 0;
	bool started = !*after;
	DIR *d;
	int fd;

	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while (files < AHEAD_FILES && bytes < AHEAD_BYTES &&
	       seen++ < AHEAD_SCAN && (e = readdir(d))) {
		if (!started) {
			started = !strcmp(e->d_name, after);
			continue;
		}
		if ((e->d_type != DT_REG && e->d_type != DT_UNKNOWN) ||
		    names_is_internal(fs->names, e->d_name, root))
			continue;
		fd = openreg_at(dirfd(d), e->d_name, O_RDONLY | O_NONBLOCK,
				false, &st);
		if (fd < 0)
			continue;
		(void)posix_fadvise(fd, 0, FILE_PREFETCH_BYTES,
				    POSIX_FADV_WILLNEED);
		files++;
		bytes += (uint64_t)st.st_size < FILE_PREFETCH_BYTES ?
				 (uint64_t)st.st_size :
				 FILE_PREFETCH_BYTES;
		close(fd);
		if (__atomic_load_n(&g_ahead.jobs, __ATOMIC_RELAXED) != job ||
		    __atomic_load_n(&g_ahead.stop, __ATOMIC_RELAXED))
			break;
	}
	closedir(d);
	pthread_mutex_lock(&g_ahead.lock);
	g_ahead.files += files;
	pthread_mutex_unlock(&g_ahead.lock);
}

static void *ahead_thread(void *arg)
{
	struct fs *fs = arg;
	char after[INODE_NAME_MAX];
	unsigned long job;
	bool root;
	int fd;

	pthread_mutex_lock(&g_ahead.lock);
	for (;;) {
		while (!__atomic_load_n(&g_ahead.stop, __ATOMIC_RELAXED) &&
		       g_ahead.job_fd < 0)
			pthread_cond_wait(&g_ahead.cond, &g_ahead.lock);
		if (__atomic_load_n(&g_ahead.stop, __ATOMIC_RELAXED))
			break;
		fd = g_ahead.job_fd;
		g_ahead.job_fd = -1;
		memcpy(after, g_ahead.job_after, sizeof(after));
		root = g_ahead.job_root;
		job = g_ahead.jobs;
		pthread_mutex_unlock(&g_ahead.lock);
		stretch(fs, fd, after, root, job);
		pthread_mutex_lock(&g_ahead.lock);
	}
	pthread_mutex_unlock(&g_ahead.lock);
	return NULL;
}

/* Under g_ahead.lock. */
static bool start_thread(struct fs *fs)
{
	int rc;

	if (g_ahead.started)
		return true;
	rc = thread_start_quiet(&g_ahead.thread, NULL, ahead_thread, fs);
	if (rc) {
		log_dbg("no read-ahead across files: %s", strerror(rc));
		return false;
	}
	g_ahead.started = true;
	return true;
}

/* Whether this open continues a run in one directory far enough for a
 * (next) stretch. Under g_ahead.lock. */
static bool continues_run(const struct inode *dir, const struct inode *in)
{
	if (dir->dev != g_ahead.dir_dev || dir->ino != g_ahead.dir_ino) {
		g_ahead.dir_dev = dir->dev;
		g_ahead.dir_ino = dir->ino;
		g_ahead.file_ino = in->ino;
		g_ahead.run = 1;
		return false;
	}
	if (in->ino == g_ahead.file_ino)
		return false; /* the same file again */
	g_ahead.file_ino = in->ino;
	g_ahead.run++;
	return g_ahead.run == 2 || g_ahead.run % (AHEAD_FILES / 2) == 0;
}

void ahead_opened(struct fs *fs, struct inode *in)
{
	struct loc l;
	int dfd, fd;
	bool go;

	if (__atomic_load_n(&g_ahead.stop, __ATOMIC_RELAXED) ||
	    loc_get(fs, in, &l))
		return;
	pthread_mutex_lock(&g_ahead.lock);
	go = continues_run(l.parent, in);
	pthread_mutex_unlock(&g_ahead.lock);
	if (!go)
		goto out;
	dfd = dirfd_get(fs, l.parent);
	if (dfd < 0)
		goto out;
	/* an fd of the job's own: the cached one may be closed any time */
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dirfd_put(fs, l.parent);
	if (fd < 0)
		goto out;
	pthread_mutex_lock(&g_ahead.lock);
	if (__atomic_load_n(&g_ahead.stop, __ATOMIC_RELAXED) ||
	    !start_thread(fs)) {
		pthread_mutex_unlock(&g_ahead.lock);
		close(fd);
		goto out;
	}
	if (g_ahead.job_fd >= 0)
		close(g_ahead.job_fd);
	g_ahead.job_fd = fd;
	snprintf(g_ahead.job_after, sizeof(g_ahead.job_after), "%s", l.name);
	g_ahead.job_root = l.parent == &fs->root;
	__atomic_add_fetch(&g_ahead.jobs, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&g_ahead.cond);
	pthread_mutex_unlock(&g_ahead.lock);
out:
	loc_put(fs, &l);
}

void ahead_stop(struct fs *fs)
{
	bool started;

	(void)fs;
	pthread_mutex_lock(&g_ahead.lock);
	__atomic_store_n(&g_ahead.stop, true, __ATOMIC_RELAXED);
	started = g_ahead.started;
	pthread_cond_signal(&g_ahead.cond);
	pthread_mutex_unlock(&g_ahead.lock);
	if (started)
		pthread_join(g_ahead.thread, NULL);
	pthread_mutex_lock(&g_ahead.lock);
	if (g_ahead.job_fd >= 0)
		close(g_ahead.job_fd);
	g_ahead.job_fd = -1;
	g_ahead.started = false;
	if (g_ahead.files)
		log_dbg("files read ahead: %lu", g_ahead.files);
	pthread_mutex_unlock(&g_ahead.lock);
}
