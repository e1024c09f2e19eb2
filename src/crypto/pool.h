/* SPDX-License-Identifier: MIT */
/*
 * A process-wide pool of worker threads for the content cipher's large
 * batches. The threads are created lazily by the first pool_run that needs
 * them (never before a daemon forks), then kept. After fork() the child
 * starts with an empty pool and creates its own threads on demand.
 */
#ifndef CRYPTO_POOL_H
#define CRYPTO_POOL_H

#include <stddef.h>

#define POOL_MAX_THREADS 64

/* Run fn(arg, i) for every i in [0, n), spread over the workers and the
 * calling thread; returns when all n calls have returned. Concurrent callers
 * share the workers. Falls back to running inline if threads cannot be
 * created. */
void pool_run(void (*fn)(void *arg, size_t i), void *arg, size_t n);

/* Total threads a batch may use including the caller (default: online CPUs,
 * at most POOL_MAX_THREADS); 1 disables the pool. Effective before the
 * workers first start. */
void pool_set_threads(unsigned n);
unsigned pool_get_threads(void);

#endif
