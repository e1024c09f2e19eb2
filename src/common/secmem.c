/* SPDX-License-Identifier: MIT */
/*
 * Locked key buffers. Each allocation is its own anonymous mapping so that
 * mlock/madvise act on exactly its pages; a small registry (protected by
 * g_lock) lets us relock after fork and wipe everything on fatal exits.
 *
 * Library contexts hold expanded keys too (AES key schedules, ChaCha20
 * states, GHASH tables). OpenSSL allocates them on its ordinary heap, and
 * its secure heap (CRYPTO_secure_malloc) serves only what OpenSSL itself
 * asks for there, which contexts are not. So OpenSSL's allocator is ours
 * (CRYPTO_set_mem_functions, set before main, when OpenSSL has allocated
 * nothing yet): it is plain malloc, except between secmem_lib_enter and
 * secmem_lib_leave, where every allocation of the calling thread is a
 * secmem buffer. The backends create their keyed contexts there; contexts
 * are per thread and long-lived, so the page per allocation is cheap.
 *
 * The first secmem_alloc also makes the process non-dumpable and sets its
 * core size limit to 0: no core dump of a process that holds keys (the
 * environment variable VEILFS_COREDUMP=1 keeps core dumps, for debugging
 * and for the test that checks that no key material is in them).
 */
#include "common/secmem.h"
#include "common/log.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
static pthread_once_t g_harden_once = PTHREAD_ONCE_INIT;
static bool g_hooked; /* OpenSSL allocates through us */
static _Thread_local unsigned t_lib_depth;

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

static int harden_rc;

static void harden(void)
{
	struct rlimit rl = { 0, 0 };
	const char *e = secure_getenv("VEILFS_COREDUMP");

	if (e && !strcmp(e, "1"))
		return;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    setrlimit(RLIMIT_CORE, &rl) < 0)
		harden_rc = -1;
}

int secmem_harden_process(void)
{
	pthread_once(&g_harden_once, harden);
	return harden_rc;
}

void *secmem_alloc(size_t n)
{
	struct region *r;
	size_t len;
	void *p;

	secmem_harden_process();
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

/* Unlink the region starting at p (NULL if none). */
static struct region *take_region(void *p)
{
	struct region **pp, *r = NULL;

	pthread_mutex_lock(&g_lock);
	for (pp = &g_regions; *pp; pp = &(*pp)->next) {
		if ((*pp)->p == p) {
			r = *pp;
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return r;
}

static void release(struct region *r)
{
	OPENSSL_cleanse(r->p, r->n);
	lsan_root_del(r->p, r->n);
	munlock(r->p, r->n);
	munmap(r->p, r->n);
	free(r);
}

void secmem_free(void *p, size_t n)
{
	struct region *r;

	(void)n;
	if (!p)
		return;
	r = take_region(p);
	if (!r)
		abort(); /* freeing something secmem never allocated */
	release(r);
}

/* Size of the region starting at p, or 0 if p is none of ours. */
static size_t region_size(const void *p)
{
	size_t n = 0;

	pthread_mutex_lock(&g_lock);
	for (struct region *r = g_regions; r; r = r->next) {
		if (r->p == p) {
			n = r->n;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return n;
}

/* Ours are page-aligned, malloc's (16-byte chunks) hardly ever: most
 * frees skip the registry. */
static bool maybe_ours(const void *p)
{
	return p && ((uintptr_t)p & ((uintptr_t)sysconf(_SC_PAGESIZE) - 1)) ==
			    0;
}

bool secmem_owns(const void *p)
{
	return maybe_ours(p) && region_size(p) > 0;
}

void secmem_any_free(void *p)
{
	struct region *r;

	if (maybe_ours(p) && (r = take_region(p))) {
		release(r);
		return;
	}
	free(p);
}

void *secmem_any_realloc(void *p, size_t n)
{
	size_t old = maybe_ours(p) ? region_size(p) : 0;
	void *q;

	if (!old) /* a heap block stays on the heap */
		return realloc(p, n);
	if (n == 0) {
		secmem_any_free(p);
		return NULL;
	}
	if (n <= old)
		return p;
	q = secmem_alloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old);
	secmem_any_free(p);
	return q;
}

static void *hook_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return t_lib_depth ? secmem_alloc(n) : malloc(n);
}

static void hook_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	secmem_any_free(p);
}

static void *hook_realloc(void *p, size_t n, const char *file, int line)
{
	if (!p)
		return hook_malloc(n, file, line);
	return secmem_any_realloc(p, n);
}

/* Before main: OpenSSL takes new allocation functions only until its
 * first allocation. */
__attribute__((constructor)) static void hook_openssl(void)
{
	g_hooked = CRYPTO_set_mem_functions(hook_malloc, hook_realloc,
					    hook_free) == 1;
}

bool secmem_lib_hooked(void)
{
	return g_hooked;
}

void secmem_lib_enter(void)
{
	t_lib_depth++;
}

void secmem_lib_leave(void)
{
	t_lib_depth--;
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
