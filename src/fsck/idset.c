// SPDX-License-Identifier: MIT
/*
 * A set of (st_dev, st_ino) pairs: hard links are checked once, and a
 * directory reached twice (a bind mount loop) is not entered again. Open
 * addressing with linear probing; grows at half load. Not thread-safe.
 */
#include <errno.h>
#include <stdlib.h>

#include "fsck/internal.h"

static size_t hash(uint64_t d, uint64_t i)
{
	uint64_t h = d * 0x9e3779b97f4a7c15ull ^ i * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h ^ h >> 29);
}

static size_t find(const uint64_t *slot, size_t cap, uint64_t d, uint64_t i)
{
	size_t k = hash(d, i) & (cap - 1);

	while (slot[2 * k] && (slot[2 * k] != d || slot[2 * k + 1] != i))
		k = (k + 1) & (cap - 1);
	return k;
}

static int grow(struct idset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 64;
	uint64_t *n = calloc(ncap, 2 * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t k = 0; k < s->cap; k++) {
		uint64_t d = s->slot[2 * k], i = s->slot[2 * k + 1];
		size_t j;

		if (!d)
			continue;
		j = find(n, ncap, d, i);
		n[2 * j] = d;
		n[2 * j + 1] = i;
	}
	free(s->slot);
	s->slot = n;
	s->cap = ncap;
	return 0;
}

int idset_add(struct idset *s, dev_t dev, ino_t ino)
{
	uint64_t d = (uint64_t)dev + 1, i = (uint64_t)ino;
	size_t k;

	if (2 * (s->n + 1) > s->cap && grow(s))
		return -ENOMEM;
	k = find(s->slot, s->cap, d, i);
	if (s->slot[2 * k])
		return 0;
	s->slot[2 * k] = d;
	s->slot[2 * k + 1] = i;
	s->n++;
	return 1;
}

bool idset_has(const struct idset *s, dev_t dev, ino_t ino)
{
	if (!s->cap)
		return false;
	return s->slot[2 * find(s->slot, s->cap, (uint64_t)dev + 1,
				(uint64_t)ino)] != 0;
}

void idset_fini(struct idset *s)
{
	free(s->slot);
	s->slot = NULL;
	s->cap = s->n = 0;
}
