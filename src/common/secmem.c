/* SPDX-License-Identifier: MIT */
/*
 * Locked key buffers. Each allocation is its own anonymous mapping so that
 * mlock/madvise act on exactly its pages; a small registry (protected by
 * g_lock) lets us relock after fork and wipe everything on fatal exits.
 */
#include "common/secmem.h"
#include "common/log.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Under ASan, LeakSanitizer does not scan anonymous mappings: pointers kept
 * in a secmem buffer (library contexts next to their subkeys) would look
 * leaked. Register each buffer as a root region so they are scanned. */
#if defined(__SANITIZE_ADDRESS__)
#define SECMEM_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SECMEM_LSAN 1
#endif
#endif
#ifdef SECMEM_LSAN
#include <sanitizer/lsan_interface.h>
#define lsan_root_add(p, n) __lsan_register_root_region(p, n)
#define lsan_root_del(p, n) __lsan_unregister_root_region(p, n)
#else
#define lsan_root_add(p, n) ((void)0)
#define lsan_root_del(p, n) ((void)0)
#endif

struct region {
	void *p;
	size_t n;
	struct region *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *g_regions; /* protected by g_lock */
static bool g_warned;		 /* protected by g_lock */

void secure_zero(void *p, size_t n)
{
	if (p && n)
		OPENSSL_cleanse(p, n);
}

int ct_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

static size_t round_pages(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static void lock_region(void *p, size_t len)
{
	if (mlock(p, len) != 0 && !g_warned) {
		g_warned = true;
		log_warn("mlock failed, key memory may be swapped");
	}
}

void *secmem_alloc(size_t n)
{
	struct region *r;
	size_t len;
	void *p;

	if (n == 0)
		n = 1;
	len = round_pages(n);
	r = malloc(sizeof(*r));
	if (!r)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED) {
		free(r);
		return NULL;
	}
	madvise(p, len, MADV_DONTDUMP);
	lsan_root_add(p, len);
	pthread_mutex_lock(&g_lock);
	lock_region(p, len);
	r->p = p;
	r->n = len;
	r->next = g_regions;
	g_regions = r;
	pthread_mutex_unlock(&g_lock);
	return p;
}

void secmem_free(void *p, size_t n)
{
	struct region **pp, *r = NULL;
	size_t len;

	if (!p)
		return;
	len = round_pages(n ? n : 1);
	OPENSSL_cleanse(p, len);
	pthread_mutex_lock(&g_lock);
	for (pp = &g_regions; *pp; pp = &(*pp)->next) {
		if ((*pp)->p == p) {
			r = *pp;
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	if (!r)
		abort(); /* freeing something secmem never allocated */
	lsan_root_del(p, r->n);
	munlock(p, r->n);
	munmap(p, r->n);
	free(r);
}

void secmem_relock_all(void)
{
	pthread_mutex_lock(&g_lock);
	for (struct region *r = g_regions; r; r = r->next)
		lock_region(r->p, r->n);
	pthread_mutex_unlock(&g_lock);
}

void secmem_wipe_all(void)
{
	pthread_mutex_lock(&g_lock);
	for (struct region *r = g_regions; r; r = r->next)
		OPENSSL_cleanse(r->p, r->n);
	pthread_mutex_unlock(&g_lock);
}
