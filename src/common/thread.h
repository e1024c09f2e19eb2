/* SPDX-License-Identifier: MIT */
/*
 * Helper threads that never take a signal: the daemon's signals go to the
 * threads libfuse set up for them.
 */
#ifndef COMMON_THREAD_H
#define COMMON_THREAD_H

#include <pthread.h>

/* pthread_create(t, attr, fn, arg) with every signal blocked in the new
 * thread; the caller's mask is unchanged. Returns pthread_create's
 * result (0 or a positive errno). */
int thread_start_quiet(pthread_t *t, const pthread_attr_t *attr,
		       void *(*fn)(void *), void *arg);

#endif
