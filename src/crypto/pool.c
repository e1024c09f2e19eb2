/* SPDX-License-Identifier: MIT */
/*
 * Worker pool. Jobs wait in a FIFO (protected by g.lock) until every item
 * has been claimed; workers and the submitting thread claim items one at a
 * time, so a slow or busy worker never delays a batch: the submitter simply
 * runs the remaining items itself. A job lives on its submitter's stack and
 * is done when its done count reaches n. Worker threads block all signals so
 * that the daemon's signal handling stays on its own threads.
 */
#include "crypto/pool.h"

#include "common/log.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

struct job {
	void (*fn)(void *arg, size_t i);
	void *arg;
	size_t n, next, done; /* protected by g.lock */
	struct job *link;     /* protected by g.lock */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct job *head, *tail; /* jobs with unclaimed items */
	unsigned want;		 /* total threads, 0 = online CPUs */
	unsigned started;	 /* workers running in this process */
	bool failed;		 /* thread creation failed: run inline */
} g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* The child of fork() has none of the parent's workers. */
static void pool_atfork_child(void)
{
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.work, NULL);
	pthread_cond_init(&g.done, NULL);
	g.head = g.tail = NULL;
	g.started = 0;
	g.failed = false;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, pool_atfork_child);
}

/* Claim the next item of the first queued job; g.lock held. */
static struct job *claim(size_t *i)
{
	struct job *j = g.head;

	if (!j)
		return NULL;
	*i = j->next++;
	if (j->next == j->n) {
		g.head = j->link;
		if (!g.head)
			g.tail = NULL;
	}
	return j;
}

static void finish(struct job *j)
{
	if (++j->done == j->n)
		pthread_cond_broadcast(&g.done);
}

static void *worker(void *unused)
{
	struct job *j;
	size_t i;

	(void)unused;
	pthread_mutex_lock(&g.lock);
	for (;;) {
		while (!(j = claim(&i)))
			pthread_cond_wait(&g.work, &g.lock);
		pthread_mutex_unlock(&g.lock);
		j->fn(j->arg, i);
		pthread_mutex_lock(&g.lock);
		finish(j);
	}
	return NULL;
}

static unsigned threads_wanted(void)
{
	long n = g.want ? (long)g.want : sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (unsigned)n;
}

/* Start the workers (total threads minus the caller); g.lock held. */
static void start(void)
{
	unsigned want = threads_wanted() - 1;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t tid;

	pthread_once(&g_atfork_once, register_atfork);
	if (pthread_attr_init(&attr)) {
		g.failed = true;
		return;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (g.started < want) {
		if (pthread_create(&tid, &attr, worker, NULL)) {
			log_warn("pool: cannot create worker threads");
			g.failed = g.started == 0;
			break;
		}
		g.started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void pool_run(void (*fn)(void *arg, size_t i), void *arg, size_t n)
{
	struct job job = { .fn = fn, .arg = arg, .n = n }, *j;
	size_t i;

	if (n == 0)
		return;
	pthread_mutex_lock(&g.lock);
	if (!g.started && !g.failed && threads_wanted() > 1)
		start();
	if (!g.started || n == 1) {
		pthread_mutex_unlock(&g.lock);
		for (i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	if (g.tail)
		g.tail->link = &job;
	else
		g.head = &job;
	g.tail = &job;
	if (n - 1 >= g.started)
		pthread_cond_broadcast(&g.work);
	else
		for (i = 1; i < n; i++)
			pthread_cond_signal(&g.work);
	/* Help with our own job first, then with whatever is queued. */
	while (job.next < job.n && (j = claim(&i))) {
		pthread_mutex_unlock(&g.lock);
		j->fn(j->arg, i);
		pthread_mutex_lock(&g.lock);
		finish(j);
	}
	while (job.done < job.n)
		pthread_cond_wait(&g.done, &g.lock);
	pthread_mutex_unlock(&g.lock);
}

void pool_set_threads(unsigned n)
{
	pthread_mutex_lock(&g.lock);
	g.want = n;
	pthread_mutex_unlock(&g.lock);
}

unsigned pool_get_threads(void)
{
	unsigned n;

	pthread_mutex_lock(&g.lock);
	n = g.failed ? 1 : threads_wanted();
	pthread_mutex_unlock(&g.lock);
	return n;
}
