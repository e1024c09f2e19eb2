/* SPDX-License-Identifier: MIT */
/*
 * A 4-byte readers-writer lock on a Linux futex, for objects kept by the
 * hundred thousand (one per inode), where pthread_rwlock_t's 56 bytes count.
 * Writers first: once a writer waits, new readers wait behind it, so a
 * stream of reads cannot starve a write (glibc's
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP). Not recursive: a thread that
 * holds the lock must not take it again, in either mode (it could wait for a
 * writer that waits for it). No fairness among writers; waiters are woken all
 * at once and try again, which is cheap while few threads share one lock.
 */
#ifndef COMMON_RWLOCK_H
#define COMMON_RWLOCK_H

#include <stdatomic.h>

/* All zero (rwlock_init or memset) is unlocked. Nothing to destroy. */
struct rwlock {
	atomic_uint w;
};

void rwlock_init(struct rwlock *l);
void rwlock_rdlock(struct rwlock *l);
void rwlock_wrlock(struct rwlock *l);
/* Release the lock held in either mode by the calling thread. */
void rwlock_unlock(struct rwlock *l);

#endif
