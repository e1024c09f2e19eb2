// SPDX-License-Identifier: MIT
/*
 * The request channel. libfuse's worker threads sleep in read(2) on
 * /dev/fuse; when a synchronous program (tar, ls -l, rm -rf, a database
 * doing 4 KiB reads) sends its next request a few microseconds after our
 * reply, the kernel must wake a sleeping thread, and on an idle machine --
 * above all in a virtual machine, where an idle CPU halts -- that wake-up
 * costs more than serving the request. So one thread at a time, the leader,
 * takes requests: it first polls a non-blocking clone of the session's fd
 * (FUSE_DEV_IOC_CLONE shares the connection's request queue) for a short
 * while, giving its CPU to anything else runnable between attempts, and
 * only then sleeps in a blocking read. The other workers wait for the
 * leader's baton, not in the kernel, so that no sleeping reader is woken
 * for a request the leader takes anyway. A leader keeps the baton through
 * an ordinary request (metadata, reads, writes) and is back polling right
 * after its reply; it hands the baton on before anything else (fsync,
 * fallocate, unknown requests) and whenever more requests are already
 * queued, so that those are served in parallel. It does not poll while
 * another thread serves a request, and polling stops when it has stopped
 * paying (a score of recent polls); it can be turned off.
 *
 * A request the leader keeps the baton through may still take long: a
 * backing filesystem that stalls (a network disk, a FUSE filesystem) can
 * block any syscall, and a big directory takes a while to list. So that no
 * request keeps the others from being read however long it takes, a
 * watchdog thread looks every WATCH_NS while requests come: a kept request
 * it finds still in progress at two looks in a row loses the baton, which
 * the watchdog hands to the next worker in its place; the leader finds that
 * out when it is back and waits for the baton like any other worker. The
 * watchdog sleeps while the channel is idle and is woken by the first kept
 * request after that.
 *
 * A reply must go out on the fd its request came from (each fd has its own
 * list of requests being processed), so every thread remembers the fd of
 * its last request, and its replies use it; replies are sent by the thread
 * that took the request. One session per process (the callbacks get the
 * session's userdata, not ours, so the channel is a static).
 */
#include "fs/chan.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include "common/log.h"
#include "common/thread.h"

/* <linux/fuse.h>: attach a new /dev/fuse fd to an existing connection. */
#ifndef FUSE_DEV_IOC_CLONE
#define FUSE_DEV_IOC_CLONE _IOR(229, 0, uint32_t)
#endif

/* From the FUSE protocol (<linux/fuse.h>): the request header is 40 bytes,
 * the opcode its second 32-bit word. */
#define IN_HEADER_LEN 40
enum {
	OP_LOOKUP = 1, OP_FORGET = 2, OP_GETATTR = 3, OP_SETATTR = 4,
	OP_READLINK = 5, OP_SYMLINK = 6, OP_MKNOD = 8, OP_MKDIR = 9,
	OP_UNLINK = 10, OP_RMDIR = 11, OP_RENAME = 12, OP_LINK = 13,
	OP_OPEN = 14, OP_READ = 15, OP_WRITE = 16, OP_STATFS = 17,
	OP_RELEASE = 18, OP_SETXATTR = 21, OP_GETXATTR = 22,
	OP_LISTXATTR = 23, OP_REMOVEXATTR = 24, OP_FLUSH = 25,
	OP_OPENDIR = 27, OP_READDIR = 28, OP_RELEASEDIR = 29,
	OP_INIT = 26, OP_ACCESS = 34, OP_CREATE = 35, OP_BATCH_FORGET = 42,
	OP_READDIRPLUS = 44, OP_RENAME2 = 45, OP_INTERRUPT = 36, OP_IOCTL = 39,
};

/* Polls that found a request raise the score by one, polls that timed out
 * lower it by SCORE_MISS; at zero only every PROBE-th chance polls. */
#define SCORE_MAX 32
#define SCORE_MISS 4
#define PROBE 64

/* The watchdog's period, and how many looks find no kept request before it
 * sleeps until the next one. */
#define WATCH_NS 10000000
#define WATCH_IDLE 100

struct chan {
	int fd;	     /* the session's fd (blocking); libfuse closes it */
	int poll_fd; /* our non-blocking clone, or -1: plain reads */
	int64_t spin_ns;
	sem_t baton; /* held by the leader */
	atomic_int busy; /* requests being served */
	atomic_int score;
	atomic_uint chances;
	atomic_ulong polled, slept; /* requests taken each way (for -d) */
	atomic_ulong quiet; /* of those, forgets and interrupts (-idle) */
	/* INIT (chan_init_wants): the flags the kernel offered, and those
	 * the filesystem wants that libfuse leaves out of its reply */
	uint32_t init_offered, init_add;
	void (*after_init)(void *);
	void *after_init_arg;

	/* The request the leader keeps the baton through: its ticket, 0 for
	 * none. Whoever resets it from a ticket to 0 owns the baton: the
	 * leader when it is back for the next request, or the watchdog,
	 * which then posts the baton. */
	atomic_ulong kept, tickets;
	atomic_ulong handed_on; /* by the leader itself (for -d) */
	atomic_ulong taken_over; /* by the watchdog (for -d) */
	atomic_bool wd_asleep;
	bool wd_started;
	pthread_t wd;
	pthread_mutex_t wd_lock;
	pthread_cond_t wd_cond; /* CLOCK_MONOTONIC */
	bool wd_stop;		/* protected by wd_lock */
};

static struct chan *g_chan;
static _Thread_local int t_fd = -1; /* fd of this thread's request */
static _Thread_local bool t_lead;   /* this thread holds the baton */
static _Thread_local bool t_busy;   /* this thread counts in busy */
static _Thread_local bool t_init;   /* this thread's request is INIT */
static _Thread_local unsigned long t_ticket; /* of the request kept */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Not while another thread serves a (long) request: polling would take
 * a CPU from it, and the next request may be far off. */
static bool worth_polling(struct chan *c)
{
	if (c->spin_ns <= 0 || atomic_load(&c->busy) > 0)
		return false;
	if (atomic_load(&c->score) > 0)
		return true;
	return atomic_fetch_add(&c->chances, 1) % PROBE == 0;
}

static void score_add(struct chan *c, int d)
{
	int s = atomic_load(&c->score), n;

	do {
		n = s + d;
		n = n < 0 ? 0 : n > SCORE_MAX ? SCORE_MAX : n;
	} while (!atomic_compare_exchange_weak(&c->score, &s, n));
}

/* Poll poll_fd until a request comes or the time is up. Returns the read's
 * result, or -1 with errno EAGAIN when nothing came; *waited says whether
 * the queue was found empty first. */
static ssize_t poll_for_request(struct chan *c, void *buf, size_t len,
				bool *waited)
{
	int64_t end = now_ns() + c->spin_ns;
	ssize_t n;

	*waited = false;
	for (;;) {
		n = read(c->poll_fd, buf, len);
		if (n >= 0 || errno != EAGAIN || now_ns() >= end)
			return n;
		*waited = true;
		sched_yield();
	}
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Whether a request (n bytes at buf) is one through which the leader
 * keeps the baton: metadata, reads and writes (a large one runs on all
 * cores through the crypto worker pool anyway), and ioctls, which we do
 * not implement: libfuse answers them ENOSYS at once, and the kernel asks
 * again every time (Python's and Perl's open check isatty). */
static bool is_quick(const uint8_t *buf, size_t n)
{
	if (n < IN_HEADER_LEN)
		return false;
	switch (get32(buf + 4)) {
	case OP_READ: case OP_WRITE:
	case OP_LOOKUP: case OP_FORGET: case OP_GETATTR: case OP_SETATTR:
	case OP_READLINK: case OP_SYMLINK: case OP_MKNOD: case OP_MKDIR:
	case OP_UNLINK: case OP_RMDIR: case OP_RENAME: case OP_LINK:
	case OP_OPEN: case OP_STATFS: case OP_RELEASE: case OP_SETXATTR:
	case OP_GETXATTR: case OP_LISTXATTR: case OP_REMOVEXATTR:
	case OP_FLUSH: case OP_OPENDIR: case OP_READDIR: case OP_RELEASEDIR:
	case OP_ACCESS: case OP_CREATE: case OP_BATCH_FORGET:
	case OP_READDIRPLUS: case OP_RENAME2: case OP_IOCTL:
		return true;
	default:
		return false;
	}
}

/* INIT: note the flags the kernel offers (struct fuse_init_in: major,
 * minor, max_readahead, flags after the header). */
static bool is_init(const uint8_t *buf, size_t n)
{
	if (n < IN_HEADER_LEN || get32(buf + 4) != OP_INIT)
		return false;
	if (n >= IN_HEADER_LEN + 16)
		g_chan->init_offered = get32(buf + IN_HEADER_LEN + 12);
	return true;
}

/* Add chan->init_add to the flags of the INIT reply: libfuse sends the
 * header and struct fuse_init_out (flags at offset 12) as two pieces. */
static void fix_init_reply(struct chan *c, struct iovec *iov, int count)
{
	uint32_t fl, add = c->init_add & c->init_offered;

	if (!add || count < 2 || iov[1].iov_len < 16)
		return;
	memcpy(&fl, (uint8_t *)iov[1].iov_base + 12, sizeof(fl));
	fl |= add;
	memcpy((uint8_t *)iov[1].iov_base + 12, &fl, sizeof(fl));
}

void chan_init_wants(bool parallel_dirops, bool handle_killpriv,
		     bool handle_killpriv_v2)
{
	if (!g_chan)
		return;
	g_chan->init_add =
		(parallel_dirops ? FUSE_PARALLEL_DIROPS : 0) |
		(handle_killpriv ? FUSE_HANDLE_KILLPRIV : 0) |
		(handle_killpriv_v2 ? FUSE_HANDLE_KILLPRIV_V2 : 0);
}

/* Requests the kernel sends by itself, not for a program's use of the
 * filesystem: dropping cached inodes, cancelling. */
static void count_quiet(struct chan *c, const uint8_t *buf, size_t n)
{
	uint32_t op = n >= IN_HEADER_LEN ? get32(buf + 4) : 0;

	if (op == OP_FORGET || op == OP_BATCH_FORGET || op == OP_INTERRUPT)
		atomic_fetch_add(&c->quiet, 1);
}

static bool more_queued(struct chan *c)
{
	struct pollfd p = { .fd = c->poll_fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

static void watch_wake(struct chan *c)
{
	pthread_mutex_lock(&c->wd_lock);
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
}

/* The leader keeps the baton through the request it just took. */
static void keep_baton(struct chan *c)
{
	t_ticket = atomic_fetch_add(&c->tickets, 1) + 1;
	if (!t_ticket) /* wrapped: 0 means none */
		t_ticket = atomic_fetch_add(&c->tickets, 1) + 1;
	atomic_store(&c->kept, t_ticket);
	/* Sequentially consistent: either we see the watchdog asleep and
	 * wake it, or it sees our ticket before it would sleep. */
	if (c->wd_started && atomic_load(&c->wd_asleep))
		watch_wake(c);
}

static void *watchdog(void *arg)
{
	struct chan *c = arg;
	unsigned long seen = 0, k;
	unsigned idle = 0;
	struct timespec ts;

	pthread_mutex_lock(&c->wd_lock);
	while (!c->wd_stop) {
		if (idle >= WATCH_IDLE) {
			atomic_store(&c->wd_asleep, true);
			if (!atomic_load(&c->kept) && !c->wd_stop)
				pthread_cond_wait(&c->wd_cond, &c->wd_lock);
			atomic_store(&c->wd_asleep, false);
			idle = 0;
			seen = 0;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += WATCH_NS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->wd_cond, &c->wd_lock, &ts);
		k = atomic_load(&c->kept);
		if (!k) {
			idle++;
			seen = 0;
			continue;
		}
		idle = 0;
		if (k != seen) {
			seen = k;
			continue;
		}
		/* In progress at two looks: at least WATCH_NS. */
		if (atomic_compare_exchange_strong(&c->kept, &k, 0)) {
			atomic_fetch_add(&c->taken_over, 1);
			sem_post(&c->baton);
		}
		seen = 0;
	}
	pthread_mutex_unlock(&c->wd_lock);
	return NULL;
}

static int watch_start(struct chan *c)
{
	pthread_condattr_t ca;
	int rc;

	if (pthread_condattr_init(&ca))
		return -ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&c->wd_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	pthread_mutex_init(&c->wd_lock, NULL);
	/* Signals go to the workers, as libfuse expects. */
	rc = thread_start_quiet(&c->wd, NULL, watchdog, c);
	if (rc) {
		pthread_cond_destroy(&c->wd_cond);
		pthread_mutex_destroy(&c->wd_lock);
		return -rc;
	}
	c->wd_started = true;
	return 0;
}

static void watch_stop(struct chan *c)
{
	if (!c->wd_started)
		return;
	pthread_mutex_lock(&c->wd_lock);
	c->wd_stop = true;
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
	pthread_join(c->wd, NULL);
	pthread_cond_destroy(&c->wd_cond);
	pthread_mutex_destroy(&c->wd_lock);
	c->wd_started = false;
}

static ssize_t chan_read(int fd, void *buf, size_t len, void *userdata)
{
	struct chan *c = g_chan;
	ssize_t n = -1;
	int err = EAGAIN;
	bool waited = false; /* after a blocking read: ask, as ever */

	(void)userdata;
	if (t_busy) {
		atomic_fetch_sub(&c->busy, 1);
		t_busy = false;
	}
	if (c->poll_fd < 0) {
		t_fd = fd;
		n = read(fd, buf, len);
		if (n >= 0) {
			atomic_fetch_add(&c->slept, 1);
			t_init = is_init(buf, (size_t)n);
			count_quiet(c, buf, (size_t)n);
		}
		return n;
	}
	if (t_lead && t_ticket) {
		unsigned long k = t_ticket;

		t_ticket = 0;
		if (!atomic_compare_exchange_strong(&c->kept, &k, 0))
			t_lead = false; /* the watchdog passed the baton on */
	}
	if (!t_lead) {
		if (sem_wait(&c->baton) < 0)
			return -1; /* EINTR: libfuse calls again */
		t_lead = true;
	}
	if (worth_polling(c)) {
		n = poll_for_request(c, buf, len, &waited);
		err = errno;
		score_add(c, n >= 0 ? 1 : err == EAGAIN ? -SCORE_MISS : 0);
	}
	if (n < 0 && err == EAGAIN) {
		n = read(fd, buf, len);
		err = errno;
		t_fd = fd;
		if (n >= 0)
			atomic_fetch_add(&c->slept, 1);
	} else {
		t_fd = c->poll_fd;
		if (n >= 0)
			atomic_fetch_add(&c->polled, 1);
	}
	if (n >= 0) {
		atomic_fetch_add(&c->busy, 1);
		t_busy = true;
		t_init = is_init(buf, (size_t)n);
		count_quiet(c, buf, (size_t)n);
		/* A request that came while the leader polled a queue found
		 * empty is rarely followed by another at once (a program
		 * waiting for each answer): spare it the question. The next
		 * read, finding a request at once, asks; so does a read that
		 * slept (its wake-up costs more than the question). */
		if (!is_quick(buf, (size_t)n) ||
		    (!waited && more_queued(c))) {
			t_lead = false;
			atomic_fetch_add(&c->handed_on, 1);
			sem_post(&c->baton);
		} else {
			keep_baton(c);
		}
	}
	errno = err;
	return n;
}

static ssize_t chan_writev(int fd, struct iovec *iov, int count,
			   void *userdata)
{
	struct chan *c = g_chan;
	ssize_t n;
	int err;

	(void)userdata;
	if (t_init)
		fix_init_reply(c, iov, count);
	/* t_fd < 0: a notification from a thread that takes no requests;
	 * any fd of the connection will do. */
	n = writev(t_fd >= 0 ? t_fd : fd, iov, count);
	if (t_init) {
		err = errno;
		t_init = false;
		if (c->after_init)
			c->after_init(c->after_init_arg);
		errno = err;
	}
	return n;
}

unsigned long chan_activity(struct chan *c)
{
	return atomic_load(&c->polled) + atomic_load(&c->slept) -
	       atomic_load(&c->quiet);
}

void chan_after_init(struct chan *c, void (*fn)(void *), void *arg)
{
	c->after_init = fn;
	c->after_init_arg = arg;
}

int chan_attach(struct chan **out, struct fuse_session *se, unsigned spin_us)
{
	static const struct fuse_custom_io io = {
		.read = chan_read,
		.writev = chan_writev,
	};
	struct chan *c;
	uint32_t master;
	int rc;

	*out = NULL;
	if (g_chan)
		return -EBUSY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fuse_session_fd(se);
	c->poll_fd = -1;
	c->spin_ns = (int64_t)spin_us * 1000;
	atomic_init(&c->score, SCORE_MAX / 2);
	if (sem_init(&c->baton, 0, 1) < 0) {
		free(c);
		return -errno;
	}
	if (spin_us) {
		c->poll_fd = open("/dev/fuse",
				  O_RDWR | O_CLOEXEC | O_NONBLOCK);
		master = (uint32_t)c->fd;
		if (c->poll_fd >= 0 &&
		    ioctl(c->poll_fd, FUSE_DEV_IOC_CLONE, &master) < 0) {
			close(c->poll_fd);
			c->poll_fd = -1;
		}
		if (c->poll_fd < 0)
			log_dbg("no polling: cannot clone /dev/fuse: %s",
				strerror(errno));
	}
	if (c->poll_fd >= 0) {
		rc = watch_start(c);
		if (rc) {
			/* Without the watchdog no baton: plain reads. */
			log_dbg("no polling: no watchdog thread: %s",
				strerror(-rc));
			close(c->poll_fd);
			c->poll_fd = -1;
		}
	}
	g_chan = c;
	rc = fuse_session_custom_io(se, &io, c->fd);
	if (rc) {
		chan_free(c);
		return rc < 0 ? rc : -EINVAL;
	}
	*out = c;
	return 0;
}

void chan_free(struct chan *c)
{
	if (!c)
		return;
	watch_stop(c);
	log_dbg("requests: %lu taken by polling, %lu after sleeping; "
		"the baton handed on %lu times, passed on after %d ms %lu times",
		atomic_load(&c->polled), atomic_load(&c->slept),
		atomic_load(&c->handed_on), WATCH_NS / 1000000,
		atomic_load(&c->taken_over));
	if (c->poll_fd >= 0)
		close(c->poll_fd);
	sem_destroy(&c->baton);
	if (g_chan == c)
		g_chan = NULL;
	free(c);
}
