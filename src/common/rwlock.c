// SPDX-License-Identifier: MIT
/*
 * The lock is one 32-bit word, also the futex every waiter sleeps on:
 *
 *   bit 31       WRITER  a writer holds the lock
 *   bit 30       RWAIT   a reader may be asleep
 *   bits 16..29  WWAIT   number of writers waiting (asleep or about to be)
 *   bits 0..15   READERS number of readers holding the lock
 *
 * A reader gets in while there is neither a writer nor a waiting writer; a
 * writer while there is neither a writer nor a reader. Every change of the
 * word is a compare-and-swap (or fetch-add) on the whole word, and a thread
 * sleeps only through FUTEX_WAIT on the exact value it saw, which the
 * kernel checks atomically with going to sleep: if the word changed in
 * between, the wait returns at once and the thread looks again.
 *
 * No lost wake-up: a waiter only needs waking when the lock becomes free
 * (no writer, no reader) -- a waiting writer needs exactly that, and a
 * waiting reader waits for WRITER and WWAIT to clear, where WWAIT drops only
 * when a writer takes the lock, which frees it again later. Before it
 * sleeps, a writer counts itself in WWAIT and a reader sets RWAIT, both on
 * the word it then waits on; the unlock that frees the lock swaps the word
 * and so sees them, clears RWAIT and wakes everyone. Woken threads that
 * lose the race count themselves again and sleep again.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/rwlock.h"

#define RW_READERS 0x0000ffffu
#define RW_WWAIT_ONE 0x00010000u
#define RW_WWAIT 0x3fff0000u
#define RW_RWAIT 0x40000000u
#define RW_WRITER 0x80000000u

_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t),
	       "a futex is 32 bits");

static void futex_wait(atomic_uint *w, unsigned val)
{
	/* EAGAIN (the word changed) and EINTR both mean: look again. */
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void rwlock_init(struct rwlock *l)
{
	atomic_init(&l->w, 0);
}

void rwlock_rdlock(struct rwlock *l)
{
	unsigned s = atomic_load_explicit(&l->w, memory_order_relaxed);

	for (;;) {
		if (!(s & (RW_WRITER | RW_WWAIT))) {
			if ((s & RW_READERS) == RW_READERS)
				abort(); /* 65535 readers at once */
			if (atomic_compare_exchange_weak_explicit(&l->w, &s,
					s + 1, memory_order_acquire,
					memory_order_relaxed))
				return;
			continue;
		}
		if (!(s & RW_RWAIT)) {
			if (!atomic_compare_exchange_weak_explicit(&l->w, &s,
					s | RW_RWAIT, memory_order_relaxed,
					memory_order_relaxed))
				continue;
			s |= RW_RWAIT;
		}
		futex_wait(&l->w, s);
		s = atomic_load_explicit(&l->w, memory_order_relaxed);
	}
}

void rwlock_wrlock(struct rwlock *l)
{
	unsigned s = 0;

	if (atomic_compare_exchange_strong_explicit(&l->w, &s, RW_WRITER,
			memory_order_acquire, memory_order_relaxed))
		return;
	/* Count ourselves as waiting: from now on no new reader gets in. */
	do {
		if ((s & RW_WWAIT) == RW_WWAIT)
			abort(); /* 16383 writers waiting */
	} while (!atomic_compare_exchange_weak_explicit(&l->w, &s,
			s + RW_WWAIT_ONE, memory_order_relaxed,
			memory_order_relaxed));
	s += RW_WWAIT_ONE;
	for (;;) {
		if (!(s & (RW_WRITER | RW_READERS))) {
			if (atomic_compare_exchange_weak_explicit(&l->w, &s,
					(s - RW_WWAIT_ONE) | RW_WRITER,
					memory_order_acquire,
					memory_order_relaxed))
				return;
			continue;
		}
		futex_wait(&l->w, s);
		s = atomic_load_explicit(&l->w, memory_order_relaxed);
	}
}

void rwlock_unlock(struct rwlock *l)
{
	unsigned s = atomic_load_explicit(&l->w, memory_order_relaxed), n;
	int freed;

	do {
		if (s & RW_WRITER)
			n = s & ~RW_WRITER;
		else if (s & RW_READERS)
			n = s - 1;
		else
			abort(); /* not locked */
		freed = !(n & (RW_WRITER | RW_READERS));
		if (freed)
			n &= ~RW_RWAIT;
	} while (!atomic_compare_exchange_weak_explicit(&l->w, &s, n,
			memory_order_release, memory_order_relaxed));
	if (freed && (s & (RW_RWAIT | RW_WWAIT)))
		futex_wake_all(&l->w);
}
