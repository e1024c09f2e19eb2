/* SPDX-License-Identifier: MIT */
/*
 * Secrets: wiping, constant-time comparison and locked buffers for keys.
 * Locked buffers are page-backed, mlock()ed, excluded from core dumps and
 * wiped with OPENSSL_cleanse before they are unmapped. Memory locks are not
 * inherited across fork(), so a daemon calls secmem_relock_all() in the child.
 */
#ifndef COMMON_SECMEM_H
#define COMMON_SECMEM_H

#include <stdbool.h>
#include <stddef.h>

/* Overwrite n bytes at p with zeros in a way the compiler cannot elide. */
void secure_zero(void *p, size_t n);

/* 1 if the n bytes at a and b are equal, else 0; time independent of data. */
int ct_equal(const void *a, const void *b, size_t n);

/* A zeroed, locked buffer of n bytes, or NULL (errno not used) when memory is
 * exhausted. If mlock is refused the buffer is still returned (a warning is
 * logged once). Caller frees with secmem_free(p, n). */
void *secmem_alloc(size_t n);

/* Wipe, unlock and release a buffer from secmem_alloc. NULL is a no-op. */
void secmem_free(void *p, size_t n);

/* Make this process non-dumpable (no core dumps, no ptrace by other
 * users) with a core size limit of 0, once; the first secmem_alloc does it,
 * so every process that ever holds a key is covered. VEILFS_COREDUMP=1 in
 * the environment leaves core dumps on (key buffers stay excluded from
 * them). Returns 0, or -1 if the kernel refused. */
int secmem_harden_process(void);

/* Between secmem_lib_enter() and secmem_lib_leave() (they nest), every
 * OpenSSL allocation of the calling thread is a secmem buffer: wrap the
 * calls that create library contexts holding expanded keys. Needs
 * secmem_lib_hooked(), which is false only if OpenSSL allocated before
 * this program's constructors ran. */
void secmem_lib_enter(void);
void secmem_lib_leave(void);
bool secmem_lib_hooked(void);

/* For libraries' allocation hooks: whether p is a secmem buffer, and
 * realloc and free for secmem buffers and heap blocks alike (a heap block
 * stays on the heap, a secmem buffer stays in secmem). */
bool secmem_owns(const void *p);
void *secmem_any_realloc(void *p, size_t n);
void secmem_any_free(void *p);

/* Re-apply mlock to every live secmem buffer (after fork). */
void secmem_relock_all(void);

/* Wipe every live secmem buffer in place (last resort on fatal exit paths);
 * the buffers stay allocated. */
void secmem_wipe_all(void);

#endif
