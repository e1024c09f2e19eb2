// SPDX-License-Identifier: MIT
/*
 * -badname (see badname.h). A shown name leads back to its entry through
 * the few stored names it can come from (names_badname_stored), or else the
 * long names of the directory, taking the entry that exists, does not
 * decrypt, matches a glob and shows as that very name; so only a listed bad
 * name is reachable this way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/badname.h"

static bool on(const struct fs *fs)
{
	return fs->opt.nbadname && !fs->plaintext;
}

static bool matches(const struct fs *fs, const char *enc)
{
	for (size_t i = 0; i < fs->opt.nbadname; i++)
		if (fnmatch(fs->opt.badname[i], enc, 0) == 0)
			return true;
	return false;
}

bool badname_wanted(const struct fs *fs, const char *name)
{
	size_t len = strlen(name), slen = strlen(NAMES_BADNAME_SUFFIX);

	return on(fs) && len > slen &&
	       !strcmp(name + len - slen, NAMES_BADNAME_SUFFIX);
}

int badname_show(const struct fs *fs, const uint8_t *iv, const char *enc,
		 char *name)
{
	if (!on(fs) || !matches(fs, enc))
		return 1;
	return names_badname_display(fs->names, iv, enc, name,
				     NAMES_MAX_PLAIN + 1) ? 1 : 0;
}

struct candidate {
	const struct fs *fs;
	int dfd;
	bool is_root;
	const uint8_t *iv;
	const char *name;
	badname_read_fn *read;
	struct badname_hit *hit;
};

/* enc is bad, matches and shows as the name looked for. */
static bool shows_as(const struct candidate *c, const char *enc)
{
	char buf[NAMES_MAX_PLAIN + 1];

	return matches(c->fs, enc) &&
	       names_decrypt(c->fs->names, c->iv, enc, strlen(enc), buf,
			     sizeof(buf)) != 0 &&
	       names_badname_display(c->fs->names, c->iv, enc, buf,
				     sizeof(buf)) == 0 &&
	       !strcmp(buf, c->name);
}

static int try_enc(const char *enc, void *arg)
{
	struct candidate *c = arg;
	struct stat st;

	/* "." and "..": the suffix stripped from ". GOCRYPTFS_BAD_NAME" would
	 * otherwise name this directory or its parent, outside the cipherdir
	 * at its root */
	if (!strcmp(enc, ".") || !strcmp(enc, "..") ||
	    strlen(enc) >= sizeof(c->hit->stored) || names_is_long(enc) ||
	    names_is_internal(c->fs->names, enc, c->is_root) ||
	    fstatat(c->dfd, enc, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !shows_as(c, enc))
		return 0;
	strcpy(c->hit->stored, enc);
	strcpy(c->hit->cname, enc);
	c->hit->is_long = false;
	return 1;
}

/* A long name shows as its .name file's content, which need not be what
 * the name is the hash of (the file was damaged), so look at each. */
static int scan_long(struct candidate *c)
{
	char side[INODE_NAME_MAX + sizeof(NAMES_LONG_SUFFIX)];
	char buf[NAMES_MAX_SIDECAR + 1];
	struct dirent *de;
	size_t len;
	DIR *d;
	int fd, rc = -ENOENT;

	fd = openat(c->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (rc && (de = readdir(d))) {
		if (!names_is_long(de->d_name) ||
		    strlen(de->d_name) >= sizeof(c->hit->stored))
			continue;
		snprintf(side, sizeof(side), "%s%s", de->d_name,
			 NAMES_LONG_SUFFIX);
		if (c->read(c->dfd, side, (uint8_t *)buf, sizeof(buf) - 1,
			    &len) || len == 0)
			continue;
		buf[len] = '\0';
		if (strlen(buf) != len || !shows_as(c, buf))
			continue;
		strcpy(c->hit->stored, de->d_name);
		strcpy(c->hit->cname, buf);
		c->hit->is_long = true;
		rc = 0;
	}
	closedir(d);
	return rc;
}

int badname_resolve(const struct fs *fs, int dfd, bool is_root,
		    const uint8_t *iv, const char *name, badname_read_fn *read,
		    struct badname_hit *hit)
{
	struct candidate c = { fs, dfd, is_root, iv, name, read, hit };

	if (names_badname_stored(fs->names, iv, name, try_enc, &c) == 1)
		return 0;
	return scan_long(&c);
}
