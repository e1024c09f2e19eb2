/* SPDX-License-Identifier: MIT */
/*
 * One-time libgcrypt set-up for the libgcrypt backends: version check,
 * secure memory for the per-thread cipher handles, which are opened with
 * GCRY_CIPHER_SECURE, and the initialisation-finished mark. libgcrypt's own
 * secure pool is locked but not excluded from core dumps, so its secure
 * allocations are our secmem buffers (gcry_set_allocation_handler); the
 * rest stays on the heap. If the application already initialised the
 * library we leave it alone.
 */
#include "crypto/aead_impl.h"

#include "common/log.h"
#include "common/secmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <gcrypt.h>

#define GCRY_NEED "1.10.0"

static int is_secure(const void *p)
{
	return secmem_owns(p);
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_rc;

static void gcry_setup(void)
{
	if (gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P))
		return;
	/* before the version check, as the manual asks */
	gcry_set_allocation_handler(malloc, secmem_alloc, is_secure,
				    secmem_any_realloc, secmem_any_free);
	if (!gcry_check_version(GCRY_NEED)) {
		log_err("libgcrypt %s or newer is needed", GCRY_NEED);
		g_rc = -EIO;
		return;
	}
	gcry_control(GCRYCTL_DISABLE_SECMEM_WARN);
	gcry_control(GCRYCTL_AUTO_EXPAND_SECMEM, 64 * 1024);
	gcry_control(GCRYCTL_INIT_SECMEM, 64 * 1024, 0);
	gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
}

int aead_gcry_init(void)
{
	pthread_once(&g_once, gcry_setup);
	return g_rc;
}
