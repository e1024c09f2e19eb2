/* SPDX-License-Identifier: MIT */
/*
 * The futex rwlock (common/rwlock.c): exclusion under contention (readers
 * never see a writer's half-done update, writers never overlap anything,
 * no update is lost), sleeping and waking in every direction, and writer
 * preference (a writer gets in while readers keep the lock busy).
 */
#include "common/rwlock.h"
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#define NSLOTS 16

static struct rwlock lk;
static atomic_int readers_in, writers_in, violations;
/* Plain memory, written by writers slot by slot: a reader that sees two
 * different values saw a write in progress. */
static volatile unsigned long slots[NSLOTS];
static unsigned long writes_done;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reader_section(void)
{
	unsigned long v;

	rwlock_rdlock(&lk);
	atomic_fetch_add(&readers_in, 1);
	if (atomic_load(&writers_in))
		atomic_fetch_add(&violations, 1);
	v = slots[0];
	for (int i = 1; i < NSLOTS; i++)
		if (slots[i] != v)
			atomic_fetch_add(&violations, 1);
	atomic_fetch_sub(&readers_in, 1);
	rwlock_unlock(&lk);
}

static void writer_section(void)
{
	rwlock_wrlock(&lk);
	if (atomic_fetch_add(&writers_in, 1) || atomic_load(&readers_in))
		atomic_fetch_add(&violations, 1);
	writes_done++;
	for (int i = 0; i < NSLOTS; i++) {
		slots[i] = writes_done;
		if (i == NSLOTS / 2)
			sched_yield();
	}
	atomic_fetch_sub(&writers_in, 1);
	rwlock_unlock(&lk);
}

struct mix {
	unsigned seed;
	int iters;
	int write_every; /* 1 in this many sections writes */
	int writes;
};

static void *mixed(void *arg)
{
	struct mix *m = arg;

	for (int i = 0; i < m->iters; i++) {
		if (rand_r(&m->seed) % m->write_every == 0) {
			writer_section();
			m->writes++;
		} else {
			reader_section();
		}
	}
	return NULL;
}

static void reset(void)
{
	rwlock_init(&lk);
	atomic_store(&readers_in, 0);
	atomic_store(&writers_in, 0);
	atomic_store(&violations, 0);
	for (int i = 0; i < NSLOTS; i++)
		slots[i] = 0;
	writes_done = 0;
}

TEST(single_thread)
{
	reset();
	rwlock_rdlock(&lk);
	rwlock_rdlock(&lk); /* two readers (no writer waits) */
	rwlock_unlock(&lk);
	rwlock_unlock(&lk);
	rwlock_wrlock(&lk);
	rwlock_unlock(&lk);
	rwlock_rdlock(&lk);
	rwlock_unlock(&lk);
	ASSERT_INT_EQ(atomic_load(&lk.w), 0);
}

/* Threads mixing reads and writes at several write ratios: exclusion holds
 * and every write is counted once. */
TEST(contention)
{
	enum { NT = 8 };
	static const int ratios[] = { 2, 8, 64 };
	pthread_t t[NT];
	struct mix m[NT];

	for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++) {
		unsigned long expect = 0;

		reset();
		for (int i = 0; i < NT; i++) {
			m[i] = (struct mix){ .seed = (unsigned)(i * 7919 + r),
					     .iters = 40000,
					     .write_every = ratios[r] };
			ASSERT(!pthread_create(&t[i], NULL, mixed, &m[i]));
		}
		for (int i = 0; i < NT; i++) {
			pthread_join(t[i], NULL);
			expect += (unsigned long)m[i].writes;
		}
		ASSERT_INT_EQ(atomic_load(&violations), 0);
		ASSERT_INT_EQ(writes_done, expect);
		ASSERT_INT_EQ(slots[NSLOTS - 1], expect);
		ASSERT_INT_EQ(atomic_load(&lk.w), 0);
	}
}

static atomic_int stage;

/* Takes the lock (for writing if arg is non-NULL), counts, leaves. */
static void *blocked(void *arg)
{
	if (arg)
		rwlock_wrlock(&lk);
	else
		rwlock_rdlock(&lk);
	atomic_fetch_add(&stage, 1);
	rwlock_unlock(&lk);
	return NULL;
}

/* With the lock held: start n threads (at most 4) that take it for
 * writing or reading, see that none gets in for 50 ms, unlock, and see that
 * all of them get in. */
static bool held_then_woken(bool write, int n)
{
	pthread_t t[4];
	int before = atomic_load(&stage);
	bool ok;

	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, blocked, write ? &lk : NULL))
			abort();
	usleep(50000);
	ok = atomic_load(&stage) == before;
	rwlock_unlock(&lk);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return ok && atomic_load(&stage) == before + n;
}

/* Sleepers are woken: readers behind a writer, a writer behind a reader,
 * writers behind a writer. */
TEST(sleep_and_wake)
{
	reset();
	atomic_store(&stage, 0);
	rwlock_wrlock(&lk);
	ASSERT(held_then_woken(false, 4));
	rwlock_rdlock(&lk);
	ASSERT(held_then_woken(true, 1));
	rwlock_wrlock(&lk);
	ASSERT(held_then_woken(true, 3));
	ASSERT_INT_EQ(atomic_load(&lk.w), 0);
}

static atomic_bool stop;

/* Holds the lock for reading most of the time: with two of these, some
 * reader always holds it, so only writer preference lets a writer in
 * (without it, the writer gets in after the readers give up, at 5 s). */
static void *busy_reader(void *arg)
{
	double end = now() + 5;

	(void)arg;
	while (!atomic_load(&stop) && now() < end) {
		rwlock_rdlock(&lk);
		usleep(2000);
		rwlock_unlock(&lk);
	}
	return NULL;
}

TEST(writer_preferred)
{
	pthread_t r[2];
	double t0, waited;

	reset();
	atomic_store(&stop, false);
	for (int i = 0; i < 2; i++) {
		ASSERT(!pthread_create(&r[i], NULL, busy_reader, NULL));
		usleep(1000);
	}
	usleep(20000);
	t0 = now();
	rwlock_wrlock(&lk);
	waited = now() - t0;
	rwlock_unlock(&lk);
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	/* Each reader holds for 2 ms: the writer waits for those inside. */
	if (waited > 1.0)
		FAILF("writer waited %.3f s behind readers", waited);
	ASSERT_INT_EQ(atomic_load(&lk.w), 0);
}

RUN_TESTS(T(single_thread), T(contention), T(sleep_and_wake),
	  T(writer_preferred))
