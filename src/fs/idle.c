// SPDX-License-Identifier: MIT
/*
 * The idle watcher (see idle.h). Every tenth of the idle time (between
 * 10 ms and 10 s) it compares the request count of the channel and the
 * number of open handles with what it saw last; once nothing has changed
 * and nothing was open for the whole idle time, it unmounts: umount2 as
 * root, fusermount3 -u otherwise. Before that it checks that the mount on
 * the mountpoint is still ours (something may have been mounted on top).
 */
#include "fs/idle.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread.h"
#include "fs/chan.h"
#include "fs/inode.h"

#define TICK_MIN_NS 10000000LL	    /* 10 ms */
#define TICK_MAX_NS 10000000000LL   /* 10 s */
/* After a refused unmount (EBUSY), wait at least this long to retry. */
#define RETRY_NS 1000000000LL

extern char **environ;

struct idle {
	struct fs *fs;
	struct chan *chan;
	long long idle_ns, tick_ns;
	char devno[64];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;		/* protected by lock */
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Unmount without MNT_DETACH. Returns 0 or a negative errno (-EBUSY while
 * something inside is in use). */
static int try_unmount(struct idle *w)
{
	char *argv[] = { (char *)"fusermount3", (char *)"-u", (char *)"-q",
			 w->fs->mountpoint, NULL };
	char dev[64];
	pid_t pid;
	int st, rc;

	if (fs_mount_devno(w->fs->mountpoint, dev, sizeof(dev)) ||
	    strcmp(dev, w->devno)) {
		log_dbg("idle: '%s' is no longer our mount on top",
			w->fs->mountpoint);
		return -EBUSY;
	}
	if (geteuid() == 0)
		return umount2(w->fs->mountpoint, UMOUNT_NOFOLLOW) < 0 ? -errno
								      : 0;
	rc = posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ);
	if (rc)
		return -rc;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EBUSY;
}

static void *watch(void *arg)
{
	struct idle *w = arg;
	unsigned long seen = chan_activity(w->chan), cur;
	long long quiet_since = now_ns(), next_try = 0, t;
	struct timespec until;
	int rc;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		t = until.tv_nsec + w->tick_ns;
		until.tv_sec += t / 1000000000LL;
		until.tv_nsec = t % 1000000000LL;
		while (!w->stop &&
		       pthread_cond_timedwait(&w->cond, &w->lock, &until) !=
			       ETIMEDOUT)
			;
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->lock);
		cur = chan_activity(w->chan);
		t = now_ns();
		if (cur != seen || atomic_load(&w->fs->nopen) > 0) {
			seen = cur;
			quiet_since = t;
		} else if (t - quiet_since >= w->idle_ns && t >= next_try) {
			rc = try_unmount(w);
			if (!rc) {
				log_info("idle for %.3g s: unmounted '%s'",
					 (double)w->idle_ns / 1e9,
					 w->fs->mountpoint);
				return NULL;
			}
			log_dbg("idle: unmount refused: %s", strerror(-rc));
			next_try = t + (w->tick_ns > RETRY_NS ? w->tick_ns
							      : RETRY_NS);
		}
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int idle_start(struct idle **out, struct fs *fs, struct chan *chan,
	       long long idle_ns)
{
	pthread_condattr_t ca;
	struct idle *w;
	int rc;

	*out = NULL;
	if (!chan) {
		log_info("-idle: no request count (libfuse's request I/O); "
			 "the filesystem stays mounted");
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fs = fs;
	w->chan = chan;
	w->idle_ns = idle_ns;
	w->tick_ns = idle_ns / 10;
	if (w->tick_ns < TICK_MIN_NS)
		w->tick_ns = TICK_MIN_NS;
	if (w->tick_ns > TICK_MAX_NS)
		w->tick_ns = TICK_MAX_NS;
	rc = fs_mount_devno(fs->mountpoint, w->devno, sizeof(w->devno));
	if (rc) {
		free(w);
		return rc;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = -thread_start_quiet(&w->thread, NULL, watch, w);
	if (rc) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void idle_stop(struct idle *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
