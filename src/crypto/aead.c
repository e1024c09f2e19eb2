/* SPDX-License-Identifier: MIT */
/*
 * Content-cipher dispatch: the registry of implementations, keyed instances
 * with one backend context per thread, nonces, and the block batches of
 * spec §3.2-3.4 (AAD, hole and all-zero-nonce rules), run inline or on the
 * worker pool. Each thread's context and nonce buffer live in thread-specific
 * storage and on the instance's list (protected by lock) so that aead_free
 * can wipe the contexts of threads that are still alive; a thread that exits
 * frees its own through the key destructor.
 */
#include "crypto/aead.h"
#include "crypto/aead_impl.h"
#include "crypto/cpu.h"
#include "crypto/pool.h"

#include "common/log.h"
#include "common/secmem.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

/* Batches of at least this many blocks go to the worker pool; more for an
 * implementation whose measured speed (auto mode) makes a batch shorter
 * than PAR_MIN_US, where waking a worker would cost about what it saves. */
#define PAR_MIN_BLOCKS 16
#define PAR_MIN_US 40
#define CHUNK_BLOCKS 8
#define MAX_CHUNKS (2 * POOL_MAX_THREADS)
/* Largest single message (the libraries take int lengths). */
#define MSG_MAX (1u << 30)
#define NONCE_BUF 4096

struct tctx {
	void *ctx;
	struct aead *owner;
	struct tctx *prev, *next; /* protected by owner->lock */
	unsigned fork_gen;
	size_t npos;
	uint8_t nbuf[NONCE_BUF];
};

struct aead {
	const struct aead_impl *impl;
	size_t par_min; /* PAR_MIN_BLOCKS or more */
	uint8_t *key; /* key_len bytes, secmem */
	pthread_key_t tls;
	pthread_mutex_t lock;
	struct tctx *all; /* protected by lock */
};

static const struct aead_impl *const impls[] = {
	&aead_gcm_ossl,	    &aead_gcm_gcry,	&aead_gcm_vaes,
	&aead_gcm_vaes_avx2,
	&aead_siv_ossl,	    &aead_siv_gcry,	&aead_xchacha_ossl,
	&aead_xchacha_gcry, &aead_xchacha_avx512,
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

static const struct {
	const char *name;
	size_t key_len, nonce_len;
} ciphers[AEAD_CIPHER_COUNT] = {
	[AEAD_AES_GCM_256] = { "AES-GCM-256", 32, 16 },
	[AEAD_AES_SIV_512] = { "AES-SIV-512", 64, 16 },
	[AEAD_XCHACHA20_POLY1305] = { "XChaCha20-Poly1305", 32, 24 },
};

static size_t par_min_for(const struct aead_impl *impl);

/* Bumped in the child after fork() so that no nonce bought by the parent
 * is ever used again in the child. */
static volatile unsigned g_fork_gen;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void aead_atfork_child(void)
{
	g_fork_gen++;
}

static void aead_once(void)
{
	pthread_atfork(NULL, NULL, aead_atfork_child);
}

const char *aead_cipher_name(enum aead_cipher c)
{
	return (unsigned)c < AEAD_CIPHER_COUNT ? ciphers[c].name : "unknown";
}

size_t aead_cipher_key_len(enum aead_cipher c)
{
	return (unsigned)c < AEAD_CIPHER_COUNT ? ciphers[c].key_len : 0;
}

size_t aead_cipher_nonce_len(enum aead_cipher c)
{
	return (unsigned)c < AEAD_CIPHER_COUNT ? ciphers[c].nonce_len : 0;
}

size_t aead_impl_count_all(void)
{
	return NIMPLS;
}

const struct aead_impl *aead_impl_at_all(size_t i)
{
	return i < NIMPLS ? impls[i] : NULL;
}

size_t aead_impl_count(void)
{
	size_t n = 0;

	for (size_t k = 0; k < NIMPLS; k++)
		n += aead_impl_supported(impls[k], NULL);
	return n;
}

const struct aead_impl *aead_impl_at(size_t i)
{
	for (size_t k = 0; k < NIMPLS; k++)
		if (aead_impl_supported(impls[k], NULL) && i-- == 0)
			return impls[k];
	return NULL;
}

const struct aead_impl *aead_impl_find(const char *name)
{
	for (size_t i = 0; name && i < NIMPLS; i++)
		if (strcmp(impls[i]->name, name) == 0)
			return impls[i];
	return NULL;
}

const char *aead_impl_name(const struct aead_impl *impl)
{
	return impl->name;
}

enum aead_cipher aead_impl_cipher(const struct aead_impl *impl)
{
	return impl->cipher;
}

/* ---- self-test of our own backends --------------------------------------- */

/* Deterministic filler: the self-test needs no secret, only bytes. */
static void st_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 29 + seed * 101 + (i >> 8));
}

enum { ST_BS = 4096, ST_RUN = 3, ST_LAST = 77 };

/* Seals messages of every length class with impl and ref and compares;
 * opens them with impl, then with one bit flipped. */
static int st_messages(const struct aead_impl *impl, void *c,
		       const struct aead_impl *ref, void *rc, uint8_t *pt,
		       uint8_t *a, uint8_t *b, uint8_t *back)
{
	static const size_t lens[] = { 0, 1, 31, ST_BS, 2 * ST_BS + ST_LAST };
	static const size_t alens[] = { 24, 0, 70 };
	uint8_t nonce[24], aad[70];
	const size_t tl = impl->tag_len;

	st_fill(nonce, sizeof(nonce), 2);
	st_fill(aad, sizeof(aad), 3);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n = lens[i], al = alens[i % 3], flip;

		if (impl->seal(c, a, nonce, pt, n, aad, al) ||
		    ref->seal(rc, b, nonce, pt, n, aad, al) ||
		    memcmp(a, b, n + tl) ||
		    impl->open(c, back, nonce, a, n + tl, aad, al) ||
		    memcmp(back, pt, n))
			return -EIO;
		flip = (n + tl) / 2;
		a[flip] ^= 0x10;
		if (impl->open(c, back, nonce, a, n + tl, aad, al) != -EBADMSG)
			return -EIO;
	}
	return 0;
}

/* A run of ST_RUN blocks, the last one short, against the reference's
 * per-message seal of each block. */
static int st_run(const struct aead_impl *impl, void *c,
		  const struct aead_impl *ref, void *rc, uint8_t *pt,
		  uint8_t *a, uint8_t *b, uint8_t *back)
{
	const size_t nl = impl->nonce_len, tl = impl->tag_len;
	const size_t cbs = nl + ST_BS + tl;
	uint8_t fid[16], aad[24];
	struct aead_run r = { .plain_in = pt, .cipher_out = a, .cipher_in = a,
			      .plain_out = back, .n = ST_RUN, .bs = ST_BS,
			      .cbs = cbs, .last_len = ST_LAST, .first = 5,
			      .file_id = fid };
	size_t bad;

	st_fill(fid, sizeof(fid), 4);
	for (size_t i = 0; i < ST_RUN; i++)
		st_fill(a + i * cbs, nl, 5 + (unsigned)i);
	if (impl->seal_run(c, &r))
		return -EIO;
	memcpy(aad + 8, fid, 16);
	for (size_t i = 0; i < ST_RUN; i++) {
		size_t n = i + 1 < ST_RUN ? ST_BS : ST_LAST;

		aead_run_aad(aad, &r, i);
		if (ref->seal(rc, b, a + i * cbs, pt + i * ST_BS, n, aad, 24) ||
		    memcmp(a + i * cbs + nl, b, n + tl))
			return -EIO;
	}
	if (impl->open_run(c, &r, &bad) ||
	    memcmp(back, pt, (ST_RUN - 1) * ST_BS + ST_LAST))
		return -EIO;
	a[cbs + nl + 100] ^= 1;
	if (impl->open_run(c, &r, &bad) != -EBADMSG || bad != 1)
		return -EIO;
	return 0;
}

int aead_impl_selftest(const struct aead_impl *impl)
{
	const struct aead_impl *ref = impl->reference;
	const size_t max = ST_RUN * (AEAD_MAX_NONCE_LEN + ST_BS + AEAD_TAG_LEN);
	uint8_t key[AEAD_MAX_KEY_LEN];
	uint8_t *pt = malloc(max), *a = malloc(max), *b = malloc(max);
	uint8_t *back = malloc(max);
	void *c = NULL, *rc = NULL;
	int r = -ENOMEM;

	if (!ref || ref->cipher != impl->cipher) {
		r = -EINVAL;
		goto out;
	}
	if (!pt || !a || !b || !back)
		goto out;
	st_fill(key, sizeof(key), 1);
	st_fill(pt, max, 6);
	r = impl->ctx_new(&c, key);
	if (!r)
		r = ref->ctx_new(&rc, key);
	if (!r)
		r = st_messages(impl, c, ref, rc, pt, a, b, back);
	if (!r)
		r = st_run(impl, c, ref, rc, pt, a, b, back);
out:
	if (c)
		impl->ctx_free(c);
	if (rc)
		ref->ctx_free(rc);
	free(pt);
	free(a);
	free(b);
	free(back);
	return r;
}

/* The self-test's result per registered backend: 0 not run yet, 1 passed,
 * 2 failed. A backend not in the registry (a test's) is tested each time. */
static pthread_mutex_t g_st_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_st[NIMPLS]; /* g_st_lock */

static bool selftest_passed(const struct aead_impl *impl)
{
	size_t k = 0;
	bool ok;
	int rc;

	while (k < NIMPLS && impls[k] != impl)
		k++;
	pthread_mutex_lock(&g_st_lock);
	if (k < NIMPLS && g_st[k]) {
		ok = g_st[k] == 1;
		goto out;
	}
	rc = aead_impl_selftest(impl);
	ok = rc == 0;
	if (rc == -EIO)
		log_warn("%s disagrees with %s in its self-test: not used",
			 impl->name, impl->reference->name);
	/* a context that could not be created (memory) is asked again */
	if (k < NIMPLS && (ok || rc == -EIO))
		g_st[k] = ok ? 1 : 2;
out:
	pthread_mutex_unlock(&g_st_lock);
	return ok;
}

bool aead_impl_supported(const struct aead_impl *impl, const char **needs)
{
	if (impl->supported && !impl->supported()) {
		if (needs)
			*needs = impl->needs ? impl->needs : "CPU support";
		return false;
	}
	if (impl->reference && !selftest_passed(impl)) {
		if (needs)
			*needs = "a passing self-test";
		return false;
	}
	return true;
}

/* ---- instances and per-thread contexts ---------------------------------- */

static void tctx_destroy(struct aead *a, struct tctx *t)
{
	a->impl->ctx_free(t->ctx);
	secure_zero(t->nbuf, sizeof(t->nbuf));
	free(t);
}

/* Thread exit: unlink and free this thread's context. */
static void tctx_exit(void *arg)
{
	struct tctx *t = arg;
	struct aead *a = t->owner;

	pthread_mutex_lock(&a->lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		a->all = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&a->lock);
	tctx_destroy(a, t);
}

/* The library backends (OpenSSL, libgcrypt) leave round keys and key stream
 * in the vector registers after a call, and a core dump holds every
 * thread's registers (a worker that then sleeps keeps them there): clear
 * them after each call and after the key set-up, as the AVX-512 backends
 * do themselves (aead_wipe_vregs). */
static void wipe_vregs(void)
{
	if (cpu_has_all(CPU_AVX512, NULL))
		aead_wipe_vregs();
	else if (cpu_has_all(CPU_AVX, NULL))
		__asm__ volatile("vzeroall" : : : "memory");
	else
		__asm__ volatile("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\t"
				 "pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
				 "pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
				 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
				 "pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
				 "pxor %%xmm10, %%xmm10\n\t"
				 "pxor %%xmm11, %%xmm11\n\t"
				 "pxor %%xmm12, %%xmm12\n\t"
				 "pxor %%xmm13, %%xmm13\n\t"
				 "pxor %%xmm14, %%xmm14\n\t"
				 "pxor %%xmm15, %%xmm15"
				 : : : "memory");
}

static int tctx_get(struct aead *a, struct tctx **out)
{
	struct tctx *t = pthread_getspecific(a->tls);
	int rc;

	if (t) {
		*out = t;
		return 0;
	}
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0, offsetof(struct tctx, nbuf));
	t->owner = a;
	t->npos = NONCE_BUF;
	rc = a->impl->ctx_new(&t->ctx, a->key);
	wipe_vregs();
	if (rc) {
		log_err("aead: cannot set up %s", a->impl->name);
		free(t);
		return rc;
	}
	if (pthread_setspecific(a->tls, t)) {
		tctx_destroy(a, t);
		return -ENOMEM;
	}
	pthread_mutex_lock(&a->lock);
	t->next = a->all;
	if (a->all)
		a->all->prev = t;
	a->all = t;
	pthread_mutex_unlock(&a->lock);
	*out = t;
	return 0;
}

int aead_new(struct aead **out, const struct aead_impl *impl,
	     const uint8_t *key, size_t key_len)
{
	struct aead *a;

	*out = NULL;
	if (!impl || !key || key_len != impl->key_len)
		return -EINVAL;
	if (!aead_impl_supported(impl, NULL))
		return -ENOTSUP;
	pthread_once(&g_once, aead_once);
	if (impl->gcrypt && aead_gcry_init())
		return -EIO;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->impl = impl;
	a->par_min = par_min_for(impl);
	a->key = secmem_alloc(key_len);
	if (!a->key)
		goto out_free;
	memcpy(a->key, key, key_len);
	if (pthread_mutex_init(&a->lock, NULL))
		goto out_free;
	if (pthread_key_create(&a->tls, tctx_exit)) {
		pthread_mutex_destroy(&a->lock);
		goto out_free;
	}
	*out = a;
	return 0;
out_free:
	secmem_free(a->key, key_len);
	free(a);
	return -ENOMEM;
}

void aead_free(struct aead *a)
{
	struct tctx *t, *next;

	if (!a)
		return;
	/* After the key is deleted no destructor runs for it any more. */
	pthread_key_delete(a->tls);
	for (t = a->all; t; t = next) {
		next = t->next;
		tctx_destroy(a, t);
	}
	pthread_mutex_destroy(&a->lock);
	secmem_free(a->key, a->impl->key_len);
	free(a);
}

const struct aead_impl *aead_get_impl(const struct aead *a)
{
	return a->impl;
}

size_t aead_nonce_len(const struct aead *a)
{
	return a->impl->nonce_len;
}

size_t aead_overhead(const struct aead *a)
{
	return a->impl->nonce_len + a->impl->tag_len;
}

/* ---- nonces ------------------------------------------------------------- */

static void rand_or_die(uint8_t *out, size_t n)
{
	if (RAND_bytes(out, (int)n) != 1) {
		log_err("aead: the CSPRNG failed");
		abort();
	}
}

/* Nonces come from a per-thread buffer refilled NONCE_BUF bytes at a time;
 * used bytes are wiped so that no nonce is handed out twice. */
static void draw(struct tctx *t, uint8_t *out, size_t n)
{
	size_t k;

	if (t->fork_gen != g_fork_gen) {
		t->fork_gen = g_fork_gen;
		t->npos = NONCE_BUF;
	}
	while (n) {
		if (t->npos == NONCE_BUF) {
			rand_or_die(t->nbuf, NONCE_BUF);
			t->npos = 0;
		}
		k = NONCE_BUF - t->npos;
		if (k > n)
			k = n;
		memcpy(out, t->nbuf + t->npos, k);
		secure_zero(t->nbuf + t->npos, k);
		t->npos += k;
		out += k;
		n -= k;
	}
}

void aead_random_nonce(struct aead *a, uint8_t *out, size_t n)
{
	struct tctx *t;

	if (tctx_get(a, &t))
		rand_or_die(out, n);
	else
		draw(t, out, n);
}

/* ---- single messages ---------------------------------------------------- */

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	while (n--)
		acc |= *p++;
	return acc == 0;
}

static int seal_one(struct aead *a, struct tctx *t, uint8_t *out,
		    const uint8_t *nonce, const uint8_t *pt, size_t ptlen,
		    const uint8_t *aad, size_t aadlen)
{
	static const uint8_t empty[1];
	size_t nl = a->impl->nonce_len;

	if (!aad) /* libgcrypt SIV refuses a NULL empty component */
		aad = empty;
	int rc;

	if (nonce)
		memmove(out, nonce, nl);
	else
		draw(t, out, nl);
	rc = a->impl->seal(t->ctx, out + nl, out, pt, ptlen, aad, aadlen);
	wipe_vregs();
	return rc;
}

/* inlen >= overhead. The all-zero nonce is refused (spec §3.4 rule 4). */
static int open_one(struct aead *a, struct tctx *t, uint8_t *out,
		    const uint8_t *in, size_t inlen, const uint8_t *aad,
		    size_t aadlen)
{
	static const uint8_t empty[1];
	size_t nl = a->impl->nonce_len;
	int rc;

	if (!aad)
		aad = empty;
	rc = all_zero(in, nl) ||
	     a->impl->open(t->ctx, out, in, in + nl, inlen - nl, aad, aadlen);
	wipe_vregs();
	if (rc) {
		memset(out, 0, inlen - aead_overhead(a));
		return -EBADMSG;
	}
	return 0;
}

int aead_seal(struct aead *a, uint8_t *out, const uint8_t *nonce,
	      const uint8_t *pt, size_t ptlen, const uint8_t *aad,
	      size_t aadlen)
{
	struct tctx *t;
	int rc;

	if (ptlen > MSG_MAX || aadlen > MSG_MAX)
		return -EINVAL;
	rc = tctx_get(a, &t);
	if (rc)
		return -EIO;
	return seal_one(a, t, out, nonce, pt, ptlen, aad, aadlen) ? -EIO : 0;
}

int aead_open(struct aead *a, uint8_t *out, const uint8_t *in, size_t inlen,
	      const uint8_t *aad, size_t aadlen)
{
	size_t oh = aead_overhead(a);
	struct tctx *t;

	if (inlen < oh)
		return -EBADMSG;
	/* zeroed output on every failure, also for what is too long */
	if (inlen - oh > MSG_MAX || aadlen > MSG_MAX || tctx_get(a, &t)) {
		memset(out, 0, inlen - oh);
		return -EBADMSG;
	}
	return open_one(a, t, out, in, inlen, aad, aadlen);
}

/* ---- block batches ------------------------------------------------------ */

struct batch {
	struct aead *a;
	uint8_t *out;
	const uint8_t *in, *file_id, *nonces;
	size_t inlen, bs, cbs, nblocks, per;
	uint64_t first;
	bool seal;
	/* per chunk: result and first bad block */
	int rc[MAX_CHUNKS];
	size_t bad[MAX_CHUNKS];
};

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A full-size all-zero block is a hole (spec §3.4 rule 2). Real blocks
 * have a non-zero nonce, so they are told apart by their first bytes. */
static bool is_hole(const uint8_t *blk, size_t len, size_t cbs, size_t nl)
{
	uint64_t acc = 0, w;
	size_t i;

	if (len != cbs || !all_zero(blk, nl))
		return false;
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, blk + i, 8);
		acc |= w;
	}
	for (; i < len; i++)
		acc |= blk[i];
	return acc == 0;
}

static size_t plain_len(const struct batch *b, size_t i)
{
	size_t left = b->inlen - i * (b->seal ? b->bs : b->cbs);
	size_t oh = b->cbs - b->bs;

	if (b->seal)
		return left < b->bs ? left : b->bs;
	if (left >= b->cbs)
		return b->bs;
	return left > oh ? left - oh : 0;
}

/* The run of blocks [i0, i1) of a batch. */
static struct aead_run batch_run(const struct batch *b, size_t i0, size_t i1)
{
	size_t in_bs = b->seal ? b->bs : b->cbs, out_bs = b->seal ? b->cbs : b->bs;
	struct aead_run r = {
		.n = i1 - i0, .bs = b->bs, .cbs = b->cbs,
		.last_len = plain_len(b, i1 - 1), .first = b->first + i0,
		.file_id = b->file_id,
	};

	if (b->seal) {
		r.plain_in = b->in + i0 * in_bs;
		r.cipher_out = b->out + i0 * out_bs;
	} else {
		r.cipher_in = b->in + i0 * in_bs;
		r.plain_out = b->out + i0 * out_bs;
	}
	return r;
}

static int seal_run(struct aead *a, struct tctx *t, const struct aead_run *r)
{
	const struct aead_impl *im = a->impl;
	int rc;

	if (im->seal_run)
		rc = im->seal_run(t->ctx, r);
	else
		rc = aead_run_seal(t->ctx, r, im->nonce_len, im->seal);
	wipe_vregs();
	return rc;
}

static int open_run(struct aead *a, struct tctx *t, const struct aead_run *r,
		    size_t *bad)
{
	const struct aead_impl *im = a->impl;
	int rc;

	if (im->open_run)
		rc = im->open_run(t->ctx, r, bad);
	else
		rc = aead_run_open(t->ctx, r, im->nonce_len, im->tag_len, bad,
				   im->open);
	wipe_vregs();
	return rc;
}

/* Seals blocks [i0, i1): nonces first (given or drawn), then one run. */
static int seal_blocks(struct batch *b, struct tctx *t, size_t i0, size_t i1)
{
	size_t nl = b->a->impl->nonce_len;
	struct aead_run r;

	for (size_t i = i0; i < i1; i++) {
		uint8_t *blk = b->out + i * b->cbs;

		if (b->nonces)
			memcpy(blk, b->nonces + i * nl, nl);
		else
			draw(t, blk, nl);
	}
	r = batch_run(b, i0, i1);
	return seal_run(b->a, t, &r) ? -EIO : 0;
}

/* What block i of an open batch is before any cipher runs on it. */
enum blk_kind { BLK_SEALED, BLK_HOLE, BLK_BAD };

static enum blk_kind open_kind(const struct batch *b, size_t i)
{
	size_t nl = b->a->impl->nonce_len, len = plain_len(b, i);
	const uint8_t *blk = b->in + i * b->cbs;
	size_t clen = len + b->cbs - b->bs;

	if (len == 0) /* a tail of 1..overhead bytes */
		return BLK_BAD;
	if (is_hole(blk, clen, b->cbs, nl))
		return BLK_HOLE;
	if (all_zero(blk, nl)) /* spec §3.4 rule 4 */
		return BLK_BAD;
	return BLK_SEALED;
}

/* Opens blocks [i0, i1): holes become zeros, runs of sealed blocks go to
 * the backend, and a block that fails is zeroed and skipped so that the
 * rest of the batch is still opened. Returns 0 or -EBADMSG with *bad the
 * first failing block. */
static int open_blocks(struct batch *b, struct tctx *t, size_t i0, size_t i1,
		       size_t *bad)
{
	size_t i = i0, j, k;
	int rc = 0;

	while (i < i1) {
		enum blk_kind kind = open_kind(b, i);

		if (kind == BLK_SEALED) {
			struct aead_run r;

			for (j = i + 1; j < i1 && open_kind(b, j) == BLK_SEALED;)
				j++;
			r = batch_run(b, i, j);
			if (!open_run(b->a, t, &r, &k)) {
				i = j;
				continue;
			}
			i += k; /* fall through: block i failed */
		} else if (kind == BLK_HOLE) {
			memset(b->out + i * b->bs, 0, b->bs);
			i++;
			continue;
		}
		memset(b->out + i * b->bs, 0, plain_len(b, i));
		if (!rc) {
			rc = -EBADMSG;
			*bad = i;
		}
		i++;
	}
	return rc;
}

/* Blocks [i0, i1) of a batch; returns 0 or the error of the first failing
 * block, whose index goes to *bad. */
static int run_blocks(struct batch *b, size_t i0, size_t i1, size_t *bad)
{
	struct tctx *t;

	if (tctx_get(b->a, &t)) {
		*bad = i0;
		for (size_t i = i0; !b->seal && i < i1; i++)
			memset(b->out + i * b->bs, 0, plain_len(b, i));
		return b->seal ? -EIO : -EBADMSG;
	}
	if (b->seal) {
		*bad = i0;
		return seal_blocks(b, t, i0, i1);
	}
	return open_blocks(b, t, i0, i1, bad);
}

static void run_chunk(void *arg, size_t k)
{
	struct batch *b = arg;
	size_t i0 = k * b->per, i1 = i0 + b->per;

	if (i1 > b->nblocks)
		i1 = b->nblocks;
	b->rc[k] = i0 < i1 ? run_blocks(b, i0, i1, &b->bad[k]) : 0;
}

static int run_batch(struct batch *b, size_t *bad)
{
	unsigned threads = 1;
	size_t chunks, k;
	int rc = 0;

	if (b->nblocks >= b->a->par_min)
		threads = pool_get_threads();
	if (threads <= 1) {
		size_t dummy;

		return run_blocks(b, 0, b->nblocks, bad ? bad : &dummy);
	}
	/* Chunks of about CHUNK_BLOCKS, claimed one at a time, so that a slow
	 * or descheduled worker holds up little of the batch. */
	chunks = b->nblocks / CHUNK_BLOCKS;
	if (chunks < threads)
		chunks = threads;
	if (chunks > MAX_CHUNKS)
		chunks = MAX_CHUNKS;
	b->per = (b->nblocks + chunks - 1) / chunks;
	chunks = (b->nblocks + b->per - 1) / b->per;
	pool_run(run_chunk, b, chunks);
	for (k = 0; k < chunks; k++)
		if (b->rc[k]) {
			rc = b->rc[k];
			if (bad)
				*bad = b->bad[k];
			break;
		}
	return rc;
}

int aead_seal_blocks(struct aead *a, uint8_t *out, const uint8_t *pt,
		     size_t ptlen, size_t block_size, uint64_t first_block,
		     const uint8_t file_id[16], const uint8_t *nonces)
{
	struct batch b = {
		.a = a, .out = out, .in = pt, .inlen = ptlen,
		.file_id = file_id, .nonces = nonces, .bs = block_size,
		.cbs = block_size + aead_overhead(a), .first = first_block,
		.seal = true,
	};

	if (ptlen == 0)
		return 0;
	if (block_size == 0 || block_size > MSG_MAX)
		return -EINVAL;
	b.nblocks = (ptlen + block_size - 1) / block_size;
	return run_batch(&b, NULL);
}

int aead_open_blocks(struct aead *a, uint8_t *out, const uint8_t *ct,
		     size_t ctlen, size_t block_size, uint64_t first_block,
		     const uint8_t file_id[16], size_t *bad)
{
	struct batch b = {
		.a = a, .out = out, .in = ct, .inlen = ctlen,
		.file_id = file_id, .bs = block_size,
		.cbs = block_size + aead_overhead(a), .first = first_block,
	};

	if (ctlen == 0)
		return 0;
	if (block_size == 0 || block_size > MSG_MAX) {
		if (bad)
			*bad = 0;
		return -EBADMSG;
	}
	b.nblocks = (ctlen + b.cbs - 1) / b.cbs;
	return run_batch(&b, bad);
}

void aead_set_threads(unsigned n)
{
	pool_set_threads(n);
}

unsigned aead_get_threads(void)
{
	return pool_get_threads();
}

/* ---- benchmark and auto selection --------------------------------------- */

static double secs(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int aead_bench(struct aead *a, unsigned ms, double *mbs)
{
	static const uint8_t fid[16] = { 1 };
	uint8_t pt[4096], out[4096 + AEAD_MAX_NONCE_LEN + AEAD_TAG_LEN];
	uint8_t aad[AEAD_BLOCK_AAD_LEN];
	double c0, w0, el;
	size_t n = 0;
	struct tctx *t;
	int rc;

	*mbs = 0;
	rc = tctx_get(a, &t);
	if (rc)
		return rc;
	memset(pt, 0x5a, sizeof(pt));
	memcpy(aad + 8, fid, 16);
	c0 = secs(CLOCK_THREAD_CPUTIME_ID);
	w0 = secs(CLOCK_MONOTONIC);
	/* ms of CPU time, cut short on a loaded machine after 2 ms of
	 * wall time per ms asked */
	do {
		for (int k = 0; k < 16; k++, n++) {
			put_be64(aad, n);
			if (seal_one(a, t, out, NULL, pt, sizeof(pt), aad,
				     sizeof(aad)))
				return -EIO;
		}
		el = secs(CLOCK_THREAD_CPUTIME_ID) - c0;
	} while (el * 1000 < ms && (secs(CLOCK_MONOTONIC) - w0) * 500 < ms);
	*mbs = (double)n * sizeof(pt) / el / 1e6;
	return 0;
}

int aead_impl_bench(const struct aead_impl *impl, unsigned ms, double *mbs)
{
	uint8_t key[AEAD_MAX_KEY_LEN];
	struct aead *a = NULL;
	int rc;

	*mbs = 0;
	rand_or_die(key, impl->key_len);
	rc = aead_new(&a, impl, key, impl->key_len);
	secure_zero(key, sizeof(key));
	if (rc)
		return rc;
	rc = aead_bench(a, ms, mbs);
	aead_free(a);
	return rc;
}

static pthread_mutex_t g_auto_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct aead_impl *g_auto[AEAD_CIPHER_COUNT]; /* g_auto_lock */
static char g_auto_fig[AEAD_CIPHER_COUNT][256];		   /* g_auto_lock */
/* The choice and its speed for par_min_for, which aead_new calls (also
 * from inside aead_impl_auto, under g_auto_lock). */
static pthread_mutex_t g_pick_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct aead_impl *g_pick[AEAD_CIPHER_COUNT]; /* g_pick_lock */
static double g_pick_mbs[AEAD_CIPHER_COUNT];		   /* g_pick_lock */

const struct aead_impl *aead_impl_auto(enum aead_cipher c, unsigned budget_ms,
				       char *figures, size_t figlen)
{
	const struct aead_impl *cand[NIMPLS], *best = NULL;
	double sum[NIMPLS] = { 0 }, mbs;
	size_t n = 0, i, best_i = 0, off = 0;
	unsigned slice;

	if ((unsigned)c >= AEAD_CIPHER_COUNT)
		return NULL;
	pthread_mutex_lock(&g_auto_lock);
	if (g_auto[c])
		goto out;
	for (i = 0; i < NIMPLS; i++)
		if (impls[i]->cipher == c &&
		    aead_impl_supported(impls[i], NULL))
			cand[n++] = impls[i];
	if (n == 0)
		goto out;
	/* Three alternating rounds over the candidates; aead_bench may take
	 * twice its CPU time in wall time. */
	slice = (budget_ms ? budget_ms : 50) / (6 * (unsigned)n);
	if (slice == 0)
		slice = 1;
	for (int round = 0; round < 3; round++)
		for (i = 0; i < n; i++)
			if (aead_impl_bench(cand[i], slice, &mbs) == 0)
				sum[i] += mbs / 3;
	for (i = 0; i < n; i++) {
		if (sum[i] > 0 && (!best || sum[i] > sum[best_i])) {
			best = cand[i];
			best_i = i;
		}
		if (off < sizeof(g_auto_fig[c]))
			off += (size_t)snprintf(g_auto_fig[c] + off,
						sizeof(g_auto_fig[c]) - off,
						"%s%s %.0f MB/s", i ? ", " : "",
						cand[i]->name, sum[i]);
	}
	g_auto[c] = best;
	pthread_mutex_lock(&g_pick_lock);
	g_pick[c] = best;
	g_pick_mbs[c] = best ? sum[best_i] : 0;
	pthread_mutex_unlock(&g_pick_lock);
out:
	best = g_auto[c];
	if (figures && figlen)
		snprintf(figures, figlen, "%s", g_auto_fig[c]);
	pthread_mutex_unlock(&g_auto_lock);
	return best;
}

static size_t par_min_for(const struct aead_impl *impl)
{
	double mbs = 0, blocks;

	pthread_mutex_lock(&g_pick_lock);
	if (g_pick[impl->cipher] == impl)
		mbs = g_pick_mbs[impl->cipher];
	pthread_mutex_unlock(&g_pick_lock);
	/* MB/s is bytes per microsecond */
	blocks = mbs * PAR_MIN_US / 4096; /* aead_bench seals 4 KiB */
	return blocks > PAR_MIN_BLOCKS ? (size_t)blocks : PAR_MIN_BLOCKS;
}
