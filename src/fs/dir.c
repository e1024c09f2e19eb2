// SPDX-License-Identifier: MIT
/*
 * Namespace operations on the encrypted tree (spec §4). Every syscall is
 * relative to a cached directory fd and uses the stored name with
 * O_NOFOLLOW / AT_SYMLINK_NOFOLLOW. A new directory never exists without its
 * gocryptfs.diriv; long names get their .name sidecar before the entry and
 * lose it after the entry is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/secmem.h"
#include "fs/badname.h"
#include "fs/dir.h"
#include "fs/file.h"
#include "fs/inode.h"

#define SIDECAR_NAME_MAX (INODE_NAME_MAX + sizeof(NAMES_LONG_SUFFIX))
/* Longest stored symlink target we read back. */
#define LINK_MAX_STORED 8192

struct dname {
	char stored[INODE_NAME_MAX];
	char cname[NAMES_MAX_CNAME];
	bool is_long;
};

static int read_small(int dfd, const char *name, uint8_t *buf, size_t cap,
		      size_t *len)
{
	ssize_t r;
	size_t done = 0;
	int fd, rc = 0;

	fd = open_regular_checked_at(dfd, name, O_RDONLY, NULL);
	if (fd < 0)
		return fd;
	while (done < cap) {
		r = read(fd, buf + done, cap - done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	*len = done;
	return rc;
}

/* The gocryptfs.diriv of the directory dfd, uncached: 0, the negative
 * errno of opening or reading it, or -EIO when it is corrupt. */
static int read_diriv(int dfd, uint8_t iv[static NAMES_DIRIV_LEN])
{
	static const uint8_t zero[NAMES_DIRIV_LEN];
	uint8_t buf[NAMES_DIRIV_LEN + 1];
	size_t len;
	int rc;

	/* spec §4.1: exactly 16 bytes, not all zero. */
	rc = read_small(dfd, NAMES_DIRIV_FILE, buf, sizeof(buf), &len);
	if (rc)
		return rc;
	if (len != NAMES_DIRIV_LEN || !memcmp(buf, zero, len))
		return -EIO;
	memcpy(iv, buf, NAMES_DIRIV_LEN);
	return 0;
}

/* How long -sharedstorage believes a directory's IV: another mount may
 * remove the directory and make a new one by the same name, which a
 * network backing (sshfs) may show as the same inode. Listings read it
 * anew every time. */
#define SHARED_IV_NS 1000000000ull

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The IV of dir (dfd), from the cache unless fresh. */
static int get_iv(struct fs *fs, struct inode *dir, int dfd,
		  uint8_t iv[static NAMES_DIRIV_LEN], bool fresh)
{
	uint8_t buf[NAMES_DIRIV_LEN];
	bool shared = fs->opt.sharedstorage;

	if (fs->plaintext || !fs->diriv) {
		memset(iv, 0, NAMES_DIRIV_LEN);
		return 0;
	}
	pthread_mutex_lock(&fs->lock);
	if (dir->iv_valid && !fresh && (!shared || coarse_ns() < dir->iv_until)) {
		memcpy(iv, dir->iv, NAMES_DIRIV_LEN);
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	pthread_mutex_unlock(&fs->lock);
	if (read_diriv(dfd, buf)) {
		log_warn("directory inode %ju: missing or corrupt %s",
			 (uintmax_t)dir->ino, NAMES_DIRIV_FILE);
		return -EIO;
	}
	memcpy(iv, buf, NAMES_DIRIV_LEN);
	pthread_mutex_lock(&fs->lock);
	memcpy(dir->iv, buf, NAMES_DIRIV_LEN);
	dir->iv_valid = true;
	dir->iv_until = shared ? coarse_ns() + SHARED_IV_NS : 0;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int dir_iv(struct fs *fs, struct inode *dir, int dfd,
	   uint8_t iv[static NAMES_DIRIV_LEN])
{
	return get_iv(fs, dir, dfd, iv, false);
}

/* Plaintext name -> stored name under the directory IV iv. */
static int enc_name_iv(struct fs *fs, const uint8_t *iv, const char *name,
		       struct dname *dn)
{
	int rc;

	if (!names_valid_plain(name, strlen(name)))
		return strlen(name) > NAMES_MAX_PLAIN ? -ENAMETOOLONG : -EINVAL;
	rc = names_encrypt(fs->names, iv, name, dn->cname, sizeof(dn->cname));
	if (rc)
		return rc;
	rc = names_store_name(fs->names, dn->cname, dn->stored,
			      sizeof(dn->stored));
	if (rc < 0)
		return rc;
	dn->is_long = rc == 1;
	return 0;
}

/* Plaintext name -> stored name in dir. */
/* -badname: name carries the suffix. A real name with the suffix first,
 * as gocryptfs does; else the entry shown under that name; nothing new
 * can be made under such a name. */
static int enc_badname(struct fs *fs, struct inode *dir, int dfd,
		       const uint8_t *iv, const char *name, struct dname *dn)
{
	struct badname_hit hit;
	struct stat st;
	int rc;

	if (fstatat(dfd, dn->stored, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	rc = badname_resolve(fs, dfd, dir == &fs->root, iv, name, read_small,
			     &hit);
	if (rc)
		return rc;
	strcpy(dn->stored, hit.stored);
	strcpy(dn->cname, hit.cname);
	dn->is_long = hit.is_long;
	return 0;
}

static int enc_name(struct fs *fs, struct inode *dir, int dfd,
		    const char *name, struct dname *dn)
{
	uint8_t iv[NAMES_DIRIV_LEN];
	int rc;

	if (!names_valid_plain(name, strlen(name)))
		return strlen(name) > NAMES_MAX_PLAIN ? -ENAMETOOLONG : -EINVAL;
	/* spec §4.8: gocryptfs.conf is reserved in the root. */
	if (fs->plaintext && dir == &fs->root && !strcmp(name, NAMES_CONF_FILE))
		return -EPERM;
	rc = dir_iv(fs, dir, dfd, iv);
	if (rc)
		return rc;
	rc = enc_name_iv(fs, iv, name, dn);
	if (!rc && badname_wanted(fs, name))
		rc = enc_badname(fs, dir, dfd, iv, name, dn);
	/* whatever the name, never this directory or its parent */
	if (!rc && (!strcmp(dn->stored, ".") || !strcmp(dn->stored, "..")))
		rc = -ENOENT;
	return rc;
}

static void sidecar_path(const struct dname *dn, char *out, size_t cap)
{
	snprintf(out, cap, "%s%s", dn->stored, NAMES_LONG_SUFFIX);
}

/* Returns 1 if we created the sidecar, 0 if none is needed or it exists. */
static int sidecar_create(int dfd, const struct dname *dn)
{
	char path[SIDECAR_NAME_MAX];
	size_t len = strlen(dn->cname), done = 0;
	int fd, rc = 0;

	if (!dn->is_long)
		return 0;
	sidecar_path(dn, path, sizeof(path));
	fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC, 0444);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	while (done < len) {
		ssize_t r = write(fd, dn->cname + done, len - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	if (rc) {
		unlinkat(dfd, path, 0);
		return rc;
	}
	return 1;
}

static void sidecar_remove(int dfd, const struct dname *dn)
{
	char path[SIDECAR_NAME_MAX];

	if (!dn->is_long)
		return;
	sidecar_path(dn, path, sizeof(path));
	if (unlinkat(dfd, path, 0) < 0 && errno != ENOENT)
		log_warn("could not remove long-name sidecar: %s",
			 strerror(errno));
}

/* The middle of the create family: the long-name sidecar first (spec
 * §4.5), then make(dfd, stored name, arg), and the sidecar goes again when
 * make fails. Returns 0 or a negative errno. */
typedef int make_fn(int dfd, const char *stored, void *arg);

static int make_entry(int dfd, const struct dname *dn, make_fn *make,
		      void *arg)
{
	int made = sidecar_create(dfd, dn), rc;

	if (made < 0)
		return made;
	rc = make(dfd, dn->stored, arg);
	if (rc && made)
		sidecar_remove(dfd, dn);
	return rc;
}

/* Shared prologue: dir fd and encrypted name. */
static int prep(struct fs *fs, struct inode *dir, const char *name, int *dfd,
		struct dname *dn)
{
	int rc;

	*dfd = dirfd_get(fs, dir);
	if (*dfd < 0)
		return *dfd;
	rc = enc_name(fs, dir, *dfd, name, dn);
	if (rc) {
		dirfd_put(fs, dir);
		*dfd = -1;
	}
	return rc;
}

/* Shared epilogue of the create family: owner, stat, inode. */
static int finish_new(struct fs *fs, struct inode *dir, int dfd,
		      const struct dname *dn, const struct cred *cr,
		      struct inode **out, struct stat *st)
{
	if (fs->as_root_chown && cr &&
	    fchownat(dfd, dn->stored, cr->uid, cr->gid,
		     AT_SYMLINK_NOFOLLOW) < 0)
		log_warn("chown of new entry failed: %s", strerror(errno));
	if (fstatat(dfd, dn->stored, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	*out = inode_lookup_add(fs, dir, dn->stored, st);
	return *out ? 0 : -ENOMEM;
}

/* A write answered before it is written (file.c) holds the file's rw lock
 * until it is: the backing file's times and size are final only then, and
 * the kernel keeps what an entry answers. A name of an open regular file
 * found meanwhile is stated again through its fd under the read lock. */
static void settle_stat(struct inode *in, struct stat *st)
{
	struct stat now;

	if (in->type != S_IFREG)
		return;
	rwlock_rdlock(&in->rw);
	if (in->fd >= 0 && fstat(in->fd, &now) == 0)
		*st = now;
	rwlock_unlock(&in->rw);
}

int dir_lookup(struct fs *fs, struct inode *dir, const char *name,
	       struct inode **out, struct stat *st)
{
	struct dname dn;
	int dfd, rc;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	if (fstatat(dfd, dn.stored, st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
	} else {
		*out = inode_lookup_add(fs, dir, dn.stored, st);
		if (!*out)
			rc = -ENOMEM;
		else
			settle_stat(*out, st);
	}
	dirfd_put(fs, dir);
	return rc;
}

struct mknod_args {
	mode_t mode;
	dev_t rdev;
};

static int make_node(int dfd, const char *stored, void *arg)
{
	const struct mknod_args *a = arg;

	return mknodat(dfd, stored, a->mode, a->rdev) < 0 ? -errno : 0;
}

int dir_mknod(struct fs *fs, struct inode *dir, const char *name, mode_t mode,
	      dev_t rdev, const struct cred *cr, struct inode **out,
	      struct stat *st)
{
	struct mknod_args a = { .mode = mode, .rdev = rdev };
	struct dname dn;
	int dfd, rc;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	rc = make_entry(dfd, &dn, make_node, &a);
	if (!rc)
		rc = finish_new(fs, dir, dfd, &dn, cr, out, st);
	dirfd_put(fs, dir);
	return rc;
}

/* Create the IV file of the directory cfd with len bytes at iv. */
static int put_diriv(int cfd, const uint8_t *iv, size_t len)
{
	int fd, rc = 0;

	fd = openat(cfd, NAMES_DIRIV_FILE,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, iv, len) != (ssize_t)len)
		rc = -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* Write a new gocryptfs.diriv into the directory fd cfd (spec §4.1). */
static int write_diriv(int cfd, uint8_t iv[static NAMES_DIRIV_LEN])
{
	if (getrandom(iv, NAMES_DIRIV_LEN, 0) != NAMES_DIRIV_LEN)
		return -EIO;
	return put_diriv(cfd, iv, NAMES_DIRIV_LEN);
}

/* The mode asked for, with the special bits the new directory cfd got from
 * mkdir (a set-group-ID bit inherited from its parent stays). */
static int set_dir_mode(int cfd, mode_t mode)
{
	struct stat st;

	if (fstat(cfd, &st) < 0 ||
	    fchmod(cfd, (st.st_mode & 07000) | (mode & 0777)) < 0)
		return -errno;
	return 0;
}

static int make_dir(int dfd, const char *stored, void *arg)
{
	return mkdirat(dfd, stored, *(mode_t *)arg) < 0 ? -errno : 0;
}

int dir_mkdir(struct fs *fs, struct inode *dir, const char *name, mode_t mode,
	      const struct cred *cr, struct inode **out, struct stat *st)
{
	uint8_t iv[NAMES_DIRIV_LEN];
	struct dname dn;
	int dfd, cfd = -1, rc;
	bool with_iv = !fs->plaintext && fs->diriv;
	/* with an IV to write, owner access first; the mode comes after */
	mode_t m = with_iv ? (mode | 0700) : mode;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	rc = make_entry(dfd, &dn, make_dir, &m);
	if (rc)
		goto out;
	if (with_iv) {
		cfd = openat(dfd, dn.stored,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = cfd < 0 ? -errno : write_diriv(cfd, iv);
		if (!rc && (mode & 0700) != 0700)
			rc = set_dir_mode(cfd, mode);
		if (rc) {
			log_warn("mkdir: could not create %s: %s",
				 NAMES_DIRIV_FILE, strerror(-rc));
			if (cfd >= 0)
				unlinkat(cfd, NAMES_DIRIV_FILE, 0);
			unlinkat(dfd, dn.stored, AT_REMOVEDIR);
			sidecar_remove(dfd, &dn);
			goto out;
		}
	}
	rc = finish_new(fs, dir, dfd, &dn, cr, out, st);
	if (!rc && with_iv && (*out)->type == S_IFDIR) {
		pthread_mutex_lock(&fs->lock);
		memcpy((*out)->iv, iv, NAMES_DIRIV_LEN);
		(*out)->iv_valid = true;
		(*out)->iv_until = coarse_ns() + SHARED_IV_NS;
		pthread_mutex_unlock(&fs->lock);
	}
out:
	if (cfd >= 0)
		close(cfd);
	secure_zero(iv, sizeof(iv));
	dirfd_put(fs, dir);
	return rc;
}

static int make_symlink(int dfd, const char *stored, void *arg)
{
	return symlinkat(arg, dfd, stored) < 0 ? -errno : 0;
}

int dir_symlink(struct fs *fs, struct inode *dir, const char *name,
		const char *target, const struct cred *cr, struct inode **out,
		struct stat *st)
{
	struct dname dn;
	char *enc = NULL;
	int dfd = -1, rc;

	enc = malloc(LINK_MAX_STORED);
	if (!enc)
		return -ENOMEM;
	rc = names_encrypt_symlink(fs->names, target, strlen(target), enc,
				   LINK_MAX_STORED);
	if (rc)
		goto out_free;
	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		goto out_free;
	rc = make_entry(dfd, &dn, make_symlink, enc);
	if (!rc)
		rc = finish_new(fs, dir, dfd, &dn, cr, out, st);
	dirfd_put(fs, dir);
out_free:
	free(enc);
	return rc;
}

struct open_args {
	int flags;
	mode_t mode;
	int fd;	      /* out */
	bool existed; /* out: an entry that was there was opened */
};

/* Always exclusive first: without O_EXCL, an entry that is there already
 * (made after the kernel's LOOKUP by another mount of the cipherdir, or by
 * another network client at the same moment) is opened as it is, not
 * taken for a new one: it keeps its owner, and an O_TRUNC clears its
 * set-id bits as an open does (ops.c). */
static int make_file(int dfd, const char *stored, void *arg)
{
	struct open_args *a = arg;
	int tries;

	a->existed = false;
	a->fd = openat(dfd, stored, a->flags | O_EXCL, a->mode);
	if (a->fd < 0)
		a->fd = -errno;
	for (tries = 0; a->fd == -EEXIST && !(a->flags & O_EXCL) && tries < 8;
	     tries++) {
		/* what is there: a regular file only, never opened otherwise */
		a->fd = open_regular_checked_at(dfd, stored,
						a->flags & ~O_CREAT, NULL);
		if (a->fd >= 0) {
			a->existed = true;
		} else if (a->fd == -ENOENT) {
			a->fd = openat(dfd, stored, a->flags | O_EXCL, a->mode);
			if (a->fd < 0)
				a->fd = -errno;
		}
	}
	return a->fd < 0 ? a->fd : 0;
}

int dir_create(struct fs *fs, struct inode *dir, const char *name,
	       mode_t mode, int flags, const struct cred *cr,
	       struct inode **out, struct stat *st, bool *existed)
{
	/* spec §3.9: always read-write, no O_APPEND (we compute offsets).
	 * Without O_EXCL an existing entry is opened: never wait in that
	 * open (a FIFO put there), and take nothing but a regular file. */
	struct open_args a = {
		.flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
			 O_NONBLOCK | O_NOCTTY | (flags & O_EXCL),
		.mode = mode,
		.fd = -1,
	};
	struct dname dn;
	int dfd, fd = -1, rc;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	rc = make_entry(dfd, &dn, make_file, &a);
	fd = a.fd;
	*existed = a.existed;
	if (rc)
		goto out;
	if (fstat(fd, st) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		rc = -EIO;
		goto out;
	}
	if (fs->as_root_chown && cr && !a.existed) {
		if (fchown(fd, cr->uid, cr->gid) < 0)
			log_warn("chown of new file failed: %s",
				 strerror(errno));
		else if (fstat(fd, st) < 0) {
			rc = -errno;
			goto out;
		}
	}
	*out = inode_lookup_add(fs, dir, dn.stored, st);
	if (!*out) {
		rc = -ENOMEM;
		goto out;
	}
	file_attach(fs, *out, fd, true);
	fd = -1;
	/* An existing file opened with O_TRUNC: cut it under the inode
	 * lock, like any other truncate. */
	if ((flags & O_TRUNC) && st->st_size) {
		rc = file_truncate(fs, *out, 0);
		if (rc) {
			file_release(fs, *out);
			inode_forget(fs, *out, 1);
			goto out;
		}
		st->st_size = 0;
	}
out:
	if (fd >= 0)
		close(fd);
	dirfd_put(fs, dir);
	return rc;
}

struct link_args {
	int sfd;	  /* the source's parent */
	const char *name; /* the source's stored name */
};

static int make_link(int dfd, const char *stored, void *arg)
{
	const struct link_args *a = arg;

	return linkat(a->sfd, a->name, dfd, stored, 0) < 0 ? -errno : 0;
}

int dir_link(struct fs *fs, struct inode *in, struct inode *dir,
	     const char *name, struct inode **out, struct stat *st)
{
	struct link_args a;
	struct dname dn;
	struct loc l;
	int dfd, rc;

	rc = loc_get(fs, in, &l);
	if (rc)
		return rc;
	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		goto out_loc;
	a.sfd = dirfd_get(fs, l.parent);
	if (a.sfd < 0) {
		rc = a.sfd;
		goto out_dfd;
	}
	a.name = l.name;
	rc = make_entry(dfd, &dn, make_link, &a);
	if (!rc)
		rc = finish_new(fs, dir, dfd, &dn, NULL, out, st);
	if (!rc)
		settle_stat(*out, st);
	dirfd_put(fs, l.parent);
out_dfd:
	dirfd_put(fs, dir);
out_loc:
	loc_put(fs, &l);
	return rc;
}

/* Forget the name of whatever inode st describes at (dir, stored). */
static void drop_name(struct fs *fs, struct inode *dir, const char *stored,
		      const struct stat *st)
{
	struct inode *in = inode_find_entry_pin(fs, dir, stored, st);

	if (!in)
		return;
	inode_unlink_name(fs, in, dir, stored);
	if (S_ISDIR(st->st_mode))
		dirfd_drop(fs, in);
	inode_unpin(fs, in);
}

static int unlink_name(struct fs *fs, struct inode *dir, const char *name)
{
	struct inode *in;
	struct dname dn;
	int dfd, rc;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	/* unlinkat refuses directories with EISDIR itself. */
	if (unlinkat(dfd, dn.stored, 0) < 0) {
		rc = -errno;
		goto out;
	}
	sidecar_remove(dfd, &dn);
	in = inode_find_name_pin(fs, dir, dn.stored);
	if (in) {
		inode_unlink_name(fs, in, dir, dn.stored);
		inode_unpin(fs, in);
	}
out:
	dirfd_put(fs, dir);
	return rc;
}

/* rmdir of entry stored in dfd, which must hold nothing but its IV file
 * (spec §4.1). gocryptfs moves the IV file into the parent, removes the
 * directory and then the IV file, or moves it back when the rmdir failed;
 * we delete it in place and write it back when the rmdir failed, which
 * leaves the same states behind, without the cross-directory rename: its
 * cost in the kernel grows with the depth of the tree (8 ms per rename
 * 30,000 levels down, four minutes for rm -rf of such a tree). st gets the
 * removed directory's stat. */
static int rmdir_at(struct fs *fs, int dfd, const char *stored,
		    struct stat *st)
{
	uint8_t iv[NAMES_DIRIV_LEN + 1];
	struct dirent *de;
	size_t ivlen = 0;
	DIR *d = NULL;
	int cfd, rc = 0;
	bool restore;

	cfd = openat(dfd, stored, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					  O_CLOEXEC);
	if (cfd < 0)
		return -errno;
	if (fstat(cfd, st) < 0) {
		rc = -errno;
		goto out;
	}
	if (fs->plaintext || !fs->diriv)
		goto plain;
	rc = fe_dir_stream(cfd, &d);
	if (rc)
		goto out;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, NAMES_DIRIV_FILE))
			continue;
		rc = -ENOTEMPTY;
		goto out;
	}
	rc = read_small(cfd, NAMES_DIRIV_FILE, iv, sizeof(iv), &ivlen);
	if (rc == -ENOENT) {
		rc = 0;
		goto plain;
	}
	/* A corrupt IV file (not a regular file) goes without a copy. */
	restore = rc == 0;
	rc = 0;
	if (unlinkat(cfd, NAMES_DIRIV_FILE, 0) < 0) {
		if (errno == ENOENT)
			goto plain;
		rc = -errno;
		goto out;
	}
	if (unlinkat(dfd, stored, AT_REMOVEDIR) < 0) {
		rc = -errno;
		if (!restore || put_diriv(cfd, iv, ivlen))
			log_err("rmdir: could not restore %s", NAMES_DIRIV_FILE);
	}
	goto out;
plain:
	if (unlinkat(dfd, stored, AT_REMOVEDIR) < 0)
		rc = -errno;
out:
	secure_zero(iv, sizeof(iv));
	if (d)
		closedir(d);
	close(cfd);
	return rc;
}

int dir_unlink(struct fs *fs, struct inode *dir, const char *name)
{
	int rc;

	names_change_begin(fs);
	rc = unlink_name(fs, dir, name);
	names_change_end(fs);
	return rc;
}

int dir_rmdir(struct fs *fs, struct inode *dir, const char *name)
{
	struct dname dn;
	struct stat st;
	int dfd, rc;

	rc = prep(fs, dir, name, &dfd, &dn);
	if (rc)
		return rc;
	rc = rmdir_at(fs, dfd, dn.stored, &st);
	if (!rc) {
		sidecar_remove(dfd, &dn);
		drop_name(fs, dir, dn.stored, &st);
	}
	dirfd_put(fs, dir);
	return rc;
}

struct rename_args {
	struct fs *fs;
	int sfd;	   /* the source's parent */
	const char *sname; /* the source's stored name */
	unsigned flags;
	bool dirs; /* a directory onto a directory, no flags but
		    * RENAME_WHITEOUT */
};

static int make_rename(int dfd, const char *stored, void *arg)
{
	const struct rename_args *a = arg;
	struct stat st;
	int rc;

	rc = renameat2(a->sfd, a->sname, dfd, stored, a->flags) < 0 ? -errno :
								       0;
	if ((rc == -ENOTEMPTY || rc == -EEXIST) && a->dirs) {
		rc = rmdir_at(a->fs, dfd, stored, &st);
		if (!rc)
			rc = renameat2(a->sfd, a->sname, dfd, stored,
				       a->flags) < 0 ? -errno : 0;
	}
	return rc;
}

static int rename_name(struct fs *fs, struct inode *dir, const char *name,
		       struct inode *newdir, const char *newname,
		       unsigned flags, uint64_t moved[static 2])
{
	struct rename_args a;
	struct dname sn, dn;
	struct stat sst, dst;
	struct inode *sin = NULL, *din = NULL;
	int sfd, dfd = -1, rc;
	bool have_dst = false;

	moved[0] = moved[1] = 0;
	rc = prep(fs, dir, name, &sfd, &sn);
	if (rc)
		return rc;
	rc = prep(fs, newdir, newname, &dfd, &dn);
	if (rc)
		goto out_s;
	if (fstatat(sfd, sn.stored, &sst, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto out;
	}
	have_dst = fstatat(dfd, dn.stored, &dst, AT_SYMLINK_NOFOLLOW) == 0;
	if ((dir == newdir && !strcmp(sn.stored, dn.stored)) ||
	    (have_dst && !(flags & RENAME_EXCHANGE) &&
	     dst.st_dev == sst.st_dev && dst.st_ino == sst.st_ino)) {
		/* Onto itself or onto another link of the same inode:
		 * rename(2) does nothing and succeeds. */
		if (flags & RENAME_NOREPLACE)
			rc = -EEXIST;
		goto out;
	}
	a.fs = fs;
	a.sfd = sfd;
	a.sname = sn.stored;
	a.flags = flags;
	/* A target directory that still holds its diriv is removed the
	 * gocryptfs way if it is otherwise empty, and the rename retried. */
	a.dirs = !(flags & ~(unsigned)RENAME_WHITEOUT) && have_dst &&
		 S_ISDIR(dst.st_mode) && S_ISDIR(sst.st_mode);
	rc = make_entry(dfd, &dn, make_rename, &a);
	if (rc)
		goto out;
	/* After an exchange or with a whiteout, the source name still
	 * exists and keeps its sidecar. */
	if (!(flags & (RENAME_EXCHANGE | RENAME_WHITEOUT)))
		sidecar_remove(sfd, &sn);

	sin = inode_find_entry_pin(fs, dir, sn.stored, &sst);
	if (have_dst)
		din = inode_find_entry_pin(fs, newdir, dn.stored, &dst);
	if (din && din != sin) {
		if (flags & RENAME_EXCHANGE) {
			inode_move(fs, din, newdir, dn.stored, dir, sn.stored);
		} else {
			inode_unlink_name(fs, din, newdir, dn.stored);
			if (S_ISDIR(dst.st_mode))
				dirfd_drop(fs, din);
		}
	}
	if (sin)
		inode_move(fs, sin, dir, sn.stored, newdir, dn.stored);
	if (dir != newdir) {
		if (sin && S_ISDIR(sst.st_mode))
			moved[0] = inode_nodeid(fs, sin);
		if (din && (flags & RENAME_EXCHANGE) && S_ISDIR(dst.st_mode))
			moved[1] = inode_nodeid(fs, din);
	}
	if (din)
		inode_unpin(fs, din);
	if (sin)
		inode_unpin(fs, sin);
out:
	dirfd_put(fs, newdir);
out_s:
	dirfd_put(fs, dir);
	return rc;
}

int dir_rename(struct fs *fs, struct inode *dir, const char *name,
	       struct inode *newdir, const char *newname, unsigned flags,
	       uint64_t moved[static 2])
{
	int rc;

	names_change_begin(fs);
	rc = rename_name(fs, dir, name, newdir, newname, flags, moved);
	names_change_end(fs);
	return rc;
}

/* The stored (encrypted) target of symlink in into enc (LINK_MAX_STORED
 * bytes, NUL-terminated); returns its length or -errno. */
static ssize_t read_stored_link(struct fs *fs, struct inode *in, char *enc)
{
	struct loc l;
	ssize_t n;
	int pfd, rc;

	rc = loc_get(fs, in, &l);
	if (rc)
		return rc;
	pfd = dirfd_get(fs, l.parent);
	if (pfd < 0) {
		n = pfd;
		goto out;
	}
	n = readlinkat(pfd, l.name, enc, LINK_MAX_STORED - 1);
	if (n < 0)
		n = -errno;
	else
		enc[n] = 0;
	dirfd_put(fs, l.parent);
out:
	loc_put(fs, &l);
	return n;
}

int dir_readlink(struct fs *fs, struct inode *in, char *buf, size_t cap)
{
	char *enc;
	ssize_t n;
	int rc;

	enc = malloc(LINK_MAX_STORED);
	if (!enc)
		return -ENOMEM;
	n = read_stored_link(fs, in, enc);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	rc = names_decrypt_symlink(fs->names, enc, (size_t)n, buf, cap);
	if (rc) {
		log_warn("inode %ju: corrupt symlink target",
			 (uintmax_t)in->ino);
		rc = -EIO;
	}
out:
	free(enc);
	return rc;
}

long dir_symlink_size(struct fs *fs, struct inode *in, size_t stored_len)
{
	char *enc;
	ssize_t n;
	long l;

	if (names_symlink_len_from_size(fs->names))
		return names_symlink_plain_len(fs->names, NULL, stored_len);
	/* Padded base64 (spec §0): the length depends on the padding. */
	enc = malloc(LINK_MAX_STORED);
	if (!enc)
		return -ENOMEM;
	n = read_stored_link(fs, in, enc);
	l = n < 0 ? (long)n : names_symlink_plain_len(fs->names, enc,
							(size_t)n);
	free(enc);
	return l;
}

/* Decrypt the (encrypted) stored name of an entry of the directory dfd,
 * reading the .name sidecar of a long name, into name (NAMES_MAX_PLAIN + 1
 * bytes). Returns 0, -EBADMSG (the name does not decrypt), or the negative
 * errno of reading the sidecar (-EIO: empty or oversized). */
static int dec_stored(struct fs *fs, int dfd, const uint8_t *iv,
		      const char *stored, char *name)
{
	char side[SIDECAR_NAME_MAX];
	char cname[NAMES_MAX_SIDECAR + 1];
	size_t len;
	int rc;

	if (!names_is_long(stored))
		return names_decrypt(fs->names, iv, stored, strlen(stored),
				     name, NAMES_MAX_PLAIN + 1) ? -EBADMSG : 0;
	snprintf(side, sizeof(side), "%s%s", stored, NAMES_LONG_SUFFIX);
	rc = read_small(dfd, side, (uint8_t *)cname, NAMES_MAX_SIDECAR + 1,
			&len);
	if (rc)
		return rc;
	if (len == 0 || len > NAMES_MAX_SIDECAR)
		return -EIO;
	cname[len] = 0;
	return names_decrypt(fs->names, iv, cname, len, name,
			     NAMES_MAX_PLAIN + 1) ? -EBADMSG : 0;
}

/* Decrypt one listed backing name. Returns 0, 1 to hide it (an internal
 * file) or 2 to hide it as broken (*why says how). */
/* -badname: the name to show for stored, which did not decrypt; 0, or 1
 * to hide it. The encrypted name of a long name is its .name content. */
static int dec_badname(struct fs *fs, int dfd, const uint8_t *iv,
		       const char *stored, char *name)
{
	char side[SIDECAR_NAME_MAX];
	char cname[NAMES_MAX_SIDECAR + 1];
	size_t len;

	if (!names_is_long(stored))
		return badname_show(fs, iv, stored, name);
	snprintf(side, sizeof(side), "%s%s", stored, NAMES_LONG_SUFFIX);
	if (read_small(dfd, side, (uint8_t *)cname, NAMES_MAX_SIDECAR + 1,
		       &len) ||
	    len == 0 || len > NAMES_MAX_SIDECAR)
		return 1;
	cname[len] = 0;
	return badname_show(fs, iv, cname, name);
}

static int dec_entry(struct fs *fs, struct inode *dir, int dfd,
		     const uint8_t *iv, const char *stored, char *name,
		     const char **why)
{
	int rc;

	if (names_is_internal(fs->names, stored, dir == &fs->root))
		return 1;
	if (fs->plaintext) {
		strcpy(name, stored);
		return 0;
	}
	rc = dec_stored(fs, dfd, iv, stored, name);
	if (rc == -EBADMSG && !dec_badname(fs, dfd, iv, stored, name))
		return 0;
	if (rc == -EBADMSG) {
		*why = "undecryptable name";
		return 2;
	}
	if (rc) {
		*why = "bad or missing .name file";
		return 2;
	}
	return 0;
}

struct list_arg {
	struct fs *fs;
	struct inode *dir;
	int dfd;
	uint8_t iv[NAMES_DIRIV_LEN];
	/* entries hidden as corrupt, and the first of them */
	size_t hidden;
	char first[INODE_NAME_MAX];
	const char *first_why;
};

static int list_one(void *arg, const struct dirent *de, struct dir_list *dl)
{
	struct list_arg *a = arg;
	char name[NAMES_MAX_PLAIN + 1];
	const char *why = NULL;
	int h;

	h = dec_entry(a->fs, a->dir, a->dfd, a->iv, de->d_name, name, &why);
	if (!h)
		return dir_list_add(dl, name, de->d_name, de->d_ino,
				    de->d_type, INODE_REAL);
	/* One log line per listing, however many (a hostile cipherdir must
	 * not flood the log). */
	if (h == 2 && !a->hidden++) {
		snprintf(a->first, sizeof(a->first), "%s", de->d_name);
		a->first_why = why;
	}
	return 0;
}

int dir_list_load(struct fs *fs, struct inode *dir, struct dir_list *dl)
{
	struct list_arg a = { .fs = fs, .dir = dir };
	int rc;

	memset(dl, 0, sizeof(*dl));
	a.dfd = dirfd_get(fs, dir);
	if (a.dfd < 0)
		return a.dfd;
	rc = get_iv(fs, dir, a.dfd, a.iv, fs->opt.sharedstorage);
	if (!rc)
		rc = fe_list_backing(a.dfd, dl, list_one, &a);
	if (a.hidden == 1)
		log_warn("directory inode %ju: hiding '%s': %s",
			 (uintmax_t)dir->ino, a.first, a.first_why);
	else if (a.hidden)
		log_warn("directory inode %ju: hiding %zu entries with bad "
			 "names or .name files (first '%s': %s)",
			 (uintmax_t)dir->ino, a.hidden, a.first, a.first_why);
	dirfd_put(fs, dir);
	if (rc)
		dir_list_free(dl);
	return rc;
}

/* ---- whole paths (-ctlsock) ------------------------------------------ */

struct strbuf {
	char *s;
	size_t len, cap;
};

static int sb_add(struct strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 2 > b->cap) {
		size_t cap = (b->len + n + 2) * 2;
		char *ns = realloc(b->s, cap);

		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = cap;
	}
	if (b->len)
		b->s[b->len++] = '/';
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

/* Walk the canonical relative path from the root of the cipherdir, one
 * component at a time: each directory is opened relative to its parent
 * with O_NOFOLLOW (a symlink or a file in the middle is ENOTDIR, a missing
 * one ENOENT), its IV read uncached (the inode table is not touched), and
 * the component translated. The last component need not exist. */
static int walk_path(struct fs *fs, const char *path, bool encrypt,
		     char **out)
{
	struct strbuf b = { 0 };
	const char *p = path;
	uint8_t iv[NAMES_DIRIV_LEN] = { 0 };
	int dfd = fs->root_fd, rc = 0;

	*out = NULL;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char comp[NAMES_MAX_PLAIN + 1], plain[NAMES_MAX_PLAIN + 1];
		struct dname dn;
		int nfd;

		if (n == 0 || n > NAMES_MAX_PLAIN) {
			rc = n ? -ENAMETOOLONG : -EINVAL;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (fs->diriv) {
			rc = read_diriv(dfd, iv);
			if (rc)
				break;
		}
		if (encrypt) {
			rc = enc_name_iv(fs, iv, comp, &dn);
			if (rc == -EINVAL)
				rc = -EBADMSG;
			if (!rc)
				rc = sb_add(&b, dn.stored, strlen(dn.stored));
		} else {
			rc = dec_stored(fs, dfd, iv, comp, plain);
			if (!rc)
				rc = sb_add(&b, plain, strlen(plain));
			strcpy(dn.stored, comp);
		}
		if (rc || !slash)
			break;
		nfd = openat(dfd, dn.stored,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			rc = -errno;
			break;
		}
		if (dfd != fs->root_fd)
			close(dfd);
		dfd = nfd;
		p = slash + 1;
	}
	if (dfd != fs->root_fd)
		close(dfd);
	if (!rc && !b.s)
		rc = -EINVAL;
	if (rc)
		free(b.s);
	else
		*out = b.s;
	return rc;
}

int dir_encrypt_path(struct fs *fs, const char *path, char **out)
{
	/* Plaintext names: the path is its own stored form (gocryptfs
	 * answers without looking at the cipherdir). */
	if (fs->plaintext) {
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	return walk_path(fs, path, true, out);
}

int dir_decrypt_path(struct fs *fs, const char *path, char **out)
{
	if (fs->plaintext) {
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	return walk_path(fs, path, false, out);
}

int dir_list_entry(struct fs *fs, struct inode *dir, int dfd,
		   const struct dir_ent *d, struct inode **in, struct stat *st)
{
	if (fstatat(dfd, d->stored, st, AT_SYMLINK_NOFOLLOW) < 0)
		return 1; /* vanished meanwhile */
	*in = inode_lookup_add(fs, dir, d->stored, st);
	if (!*in)
		return -ENOMEM;
	settle_stat(*in, st);
	return 0;
}
