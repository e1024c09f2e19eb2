// SPDX-License-Identifier: MIT
/*
 * Directory nodes: the directories that the walk's stack, queued files and
 * problem records refer to, each holding a reference on its parent, so a
 * path can be printed or reopened long after the walk has left it. Paths
 * are built without recursion; a 30,000-level tree is fine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsck/internal.h"

struct fnode *fnode_new(struct fnode *parent, const char *cname,
			const char *pname, dev_t dev, ino_t ino)
{
	struct fnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->cname = strdup(cname);
	n->pname = pname ? strdup(pname) : NULL;
	if (!n->cname || (pname && !n->pname)) {
		free(n->cname);
		free(n->pname);
		free(n);
		return NULL;
	}
	n->refs = 1;
	n->dev = dev;
	n->ino = ino;
	if (parent) {
		n->parent = fnode_get(parent);
		n->depth = parent->depth + 1;
	}
	return n;
}

struct fnode *fnode_get(struct fnode *n)
{
	if (n)
		__atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
	return n;
}

void fnode_put(struct fnode *n)
{
	/* Iterative: releasing the last leaf of a deep chain frees the
	 * whole chain. */
	while (n && __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		struct fnode *p = n->parent;

		free(n->cname);
		free(n->pname);
		free(n);
		n = p;
	}
}

char *fnode_path(const struct fnode *dir, const char *leaf, bool plain)
{
	const struct fnode *d;
	size_t len = 1, off;
	char *s;

	for (d = dir; d && d->parent; d = d->parent)
		len += strlen(plain && d->pname ? d->pname :
			      plain ? "?" : d->cname) + 1;
	if (leaf)
		len += strlen(leaf) + 1;
	s = malloc(len + 2);
	if (!s)
		return NULL;
	/* fill from the end */
	off = len + 1;
	s[off] = '\0';
	if (leaf) {
		off -= strlen(leaf);
		memcpy(s + off, leaf, strlen(leaf));
		s[--off] = '/';
	}
	for (d = dir; d && d->parent; d = d->parent) {
		const char *c = plain && d->pname ? d->pname :
				plain ? "?" : d->cname;

		off -= strlen(c);
		memcpy(s + off, c, strlen(c));
		s[--off] = '/';
	}
	if (off == len + 1)
		s[--off] = '/'; /* the root itself */
	if (!plain) {
		/* relative to CIPHERDIR: drop the leading '/', root is "." */
		if (s[off + 1] == '\0') {
			s[off] = '.';
		} else {
			off++;
		}
	}
	memmove(s, s + off, len + 2 - off);
	return s;
}
