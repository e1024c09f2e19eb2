// SPDX-License-Identifier: MIT
/*
 * The forward frontend: its fuse_lowlevel_ops table and thin handlers, which
 * with the shared ones of fe.c are the only callers of fuse_reply_* in
 * forward mode. Each handler calls a worker that returns 0 or -errno and
 * replies exactly once. Sizes reported to the kernel are plaintext sizes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/log.h"
#include "fs/ahead.h"
#include "fs/dir.h"
#include "fs/fe.h"
#include "fs/file.h"
#include "fs/inode.h"
#include "fs/xattr.h"

static struct fs *get_fs(fuse_req_t req)
{
	return fe_fs(req);
}

static struct inode *get_in(fuse_req_t req, fuse_ino_t ino)
{
	return fe_in(req, ino);
}

static void fix_attr(struct fs *fs, struct inode *in, struct stat *st)
{
	if (S_ISREG(st->st_mode)) {
		st->st_size = (off_t)content_cipher_to_plain_size(
			fs->content, (uint64_t)st->st_size, NULL);
	} else if (S_ISLNK(st->st_mode)) {
		long l = dir_symlink_size(fs, in, (size_t)st->st_size);

		if (l >= 0)
			st->st_size = l;
	}
}

static void reply_entry(fuse_req_t req, int rc, struct inode *in,
			const struct stat *st)
{
	fe_reply_entry(req, rc, in, st);
}

static void get_cred(fuse_req_t req, struct cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = get_fs(req);
	struct inode *dir = get_in(req, parent);
	struct inode *in = NULL;
	struct stat st;
	int rc;

	rc = dir_lookup(fs, dir, name, &in, &st);
	fe_looked_up(fs, dir, rc ? NULL : in);
	fe_reply_lookup(req, rc, in, &st);
}

static int do_getattr(struct fs *fs, struct inode *in, struct stat *st,
		      struct fuse_file_info *fi)
{
	int rc;

	(void)fi; /* an open file is stat'ed through its fd, handle or not */
	if (in->type == S_IFREG) {
		rc = file_fstat(fs, in, st);
		if (rc != -EBADF)
			return rc;
	}
	return inode_stat(fs, in, st);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	struct inode *in = get_in(req, ino);
	struct stat st;
	int rc;

	rc = do_getattr(fs, in, &st, fi);
	fe_reply_attr(req, rc, in, &st);
}

/* chmod/chown/utimens on in: through its directory fd (directories), its
 * parent and name (others), or its open fd (unlinked open files). */
static int set_meta(struct fs *fs, struct inode *in, const struct stat *attr,
		    int to_set, struct stat *now, bool *have_now)
{
	struct timespec ts[2];
	struct stat st;
	struct loc l = { 0 };
	uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
	gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
	int fd = -1, pfd = -1, rc = 0;
	bool dir = in->type == S_IFDIR, held = false;

	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_OMIT;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;

	if (dir) {
		fd = dirfd_get(fs, in);
		if (fd < 0)
			return fd;
	} else {
		/* An open file (tar's fchown/fchmod/futimens): its own fd
		 * names exactly this inode, with no name to resolve. */
		if (in->type == S_IFREG) {
			rwlock_rdlock(&in->rw);
			if (in->fd >= 0) {
				held = true;
				fd = in->fd;
			} else {
				rwlock_unlock(&in->rw);
			}
		}
		if (!held) {
			rc = loc_get(fs, in, &l);
			if (!rc) {
				pfd = dirfd_get(fs, l.parent);
				if (pfd < 0) {
					rc = pfd;
					pfd = -1;
				}
			}
			if (rc)
				goto out;
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (fd >= 0)
			rc = fchmod(fd, attr->st_mode & 07777);
		else
			rc = fchmodat(pfd, l.name, attr->st_mode & 07777,
				      AT_SYMLINK_NOFOLLOW);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		if (fd >= 0)
			rc = fchown(fd, uid, gid);
		else
			rc = fchownat(pfd, l.name, uid, gid,
				      AT_SYMLINK_NOFOLLOW);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (ts[0].tv_nsec != UTIME_OMIT || ts[1].tv_nsec != UTIME_OMIT) {
		if (fd >= 0)
			rc = futimens(fd, ts);
		else
			rc = utimensat(pfd, l.name, ts, AT_SYMLINK_NOFOLLOW);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
	}
	rc = 0;
	if (in->type == S_IFREG &&
	    (held ? fstat(fd, &st) :
		    fstatat(pfd, l.name, &st, AT_SYMLINK_NOFOLLOW)) == 0 &&
	    st.st_dev == in->dev && st.st_ino == in->ino) {
		file_restamp(fs, in, &st);
		/* through the open fd, as do_getattr would stat it */
		if (held && now) {
			*now = st;
			*have_now = true;
		}
	}
out:
	if (held)
		rwlock_unlock(&in->rw);
	if (dir && fd >= 0)
		dirfd_put(fs, in);
	if (pfd >= 0)
		dirfd_put(fs, l.parent);
	loc_put(fs, &l);
	return rc;
}

/* FUSE_CAP_HANDLE_KILLPRIV (fe_init): the kernel leaves it to us to clear
 * the set-user-ID bit, and the set-group-ID bit of a group-executable file,
 * when a file is written or truncated (chown does it on the backing file
 * itself), which spares the kernel a GETATTR before every chown. It clears
 * them for a caller without CAP_FSETID; we cannot see capabilities and take
 * root for the one caller that has it. Returns whether bits were cleared. */
static bool kill_priv(fuse_req_t req, struct fs *fs, struct inode *in)
{
	struct stat st, attr;
	mode_t m;
	int rc;

	if (fuse_req_ctx(req)->uid == 0 || in->type != S_IFREG ||
	    do_getattr(fs, in, &st, NULL))
		return false;
	m = st.st_mode & 07777;
	if (m & S_ISUID)
		m &= ~(mode_t)S_ISUID;
	if ((m & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		m &= ~(mode_t)S_ISGID;
	if (m == (st.st_mode & 07777))
		return false;
	attr.st_mode = m;
	rc = set_meta(fs, in, &attr, FUSE_SET_ATTR_MODE, NULL, NULL);
	if (rc) {
		log_warn("inode %ju: cannot clear the set-id bits: %s",
			 (uintmax_t)in->ino, strerror(-rc));
		return false;
	}
	return true;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	struct inode *in = get_in(req, ino);
	struct stat st;
	bool have_st = false; /* st is what the reply must carry */
	int rc = 0;

	/* a truncate; the reply carries the new mode */
	if ((to_set & FUSE_SET_ATTR_SIZE) && !(to_set & FUSE_SET_ATTR_MODE))
		kill_priv(req, fs, in);

	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
		      FUSE_SET_ATTR_GID))
		rc = set_meta(fs, in, attr,
			      to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
					FUSE_SET_ATTR_GID),
			      &st, &have_st);
	if (!rc && (to_set & FUSE_SET_ATTR_SIZE)) {
		have_st = false;
		if (in->type != S_IFREG)
			rc = -EINVAL;
		else
			rc = file_truncate(fs, in, (uint64_t)attr->st_size);
	}
	if (!rc && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			      FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW))) {
		have_st = false;
		rc = set_meta(fs, in, attr,
			      to_set & (FUSE_SET_ATTR_ATIME |
					FUSE_SET_ATTR_MTIME |
					FUSE_SET_ATTR_ATIME_NOW |
					FUSE_SET_ATTR_MTIME_NOW),
			      &st, &have_st);
	}
	if (!rc && !have_st)
		rc = do_getattr(fs, in, &st, fi);
	fe_reply_attr(req, rc, in, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	int rc;

	rc = dir_readlink(get_fs(req), get_in(req, ino), buf, sizeof(buf));
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct inode *in = NULL;
	struct stat st;
	struct cred cr;
	int rc;

	get_cred(req, &cr);
	rc = dir_mknod(get_fs(req), get_in(req, parent), name, mode, rdev, &cr,
		       &in, &st);
	reply_entry(req, rc, in, &st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct inode *in = NULL;
	struct stat st;
	struct cred cr;
	int rc;

	get_cred(req, &cr);
	rc = dir_mkdir(get_fs(req), get_in(req, parent), name, mode & 07777,
		       &cr, &in, &st);
	reply_entry(req, rc, in, &st);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	struct inode *in = NULL;
	struct stat st;
	struct cred cr;
	int rc;

	get_cred(req, &cr);
	rc = dir_symlink(get_fs(req), get_in(req, parent), name, link, &cr,
			 &in, &st);
	reply_entry(req, rc, in, &st);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct inode *in = NULL;
	struct stat st;
	int rc;

	rc = dir_link(get_fs(req), get_in(req, ino), get_in(req, newparent),
		      newname, &in, &st);
	reply_entry(req, rc, in, &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -dir_unlink(get_fs(req), get_in(req, parent),
					name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -dir_rmdir(get_fs(req), get_in(req, parent),
				       name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct fs *fs = get_fs(req);
	uint64_t moved[2] = { 0, 0 };
	int rc, i;

	/* RENAME_WHITEOUT (overlayfs upper layers) goes to the backing
	 * rename: the whiteout, a 0/0 character device, gets the source's
	 * encrypted name, as gocryptfs does. */
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE |
				RENAME_WHITEOUT))
		rc = -EINVAL;
	else
		rc = dir_rename(fs, get_in(req, parent), name,
				get_in(req, newparent), newname, flags, moved);
	fuse_reply_err(req, -rc);
	/* The kernel drops the kept listings of the two parents, not that
	 * of a directory that moved, whose ".." is another now: drop it
	 * (its pages), once the rename is answered. */
	for (i = 0; i < 2 && fs->sole_writer; i++)
		if (moved[i])
			fuse_lowlevel_notify_inval_inode(fs->se, moved[i], 0,
							 0);
}

/* -sharedstorage: an appending handle bypasses the page cache. A cached
 * write is split at page boundaries that the kernel computes from its own
 * idea of the end of the file; while another mount appends, each piece
 * would land at the real end on its own, between the other's records. */
static void set_append_io(struct fs *fs, struct fuse_file_info *fi)
{
	if (fs->opt.sharedstorage && (fi->flags & O_APPEND))
		fi->direct_io = 1;
}

/* Whether a close of this handle can spare the FLUSH round trip (file_flush
 * waits for writes in progress, flushes the backing file as a close would
 * and reports the error of a write answered early). A read-only handle has
 * nothing to flush. On a local backing, a close has nothing to do that a
 * local filesystem's close does: no other host waits for the data, and an
 * early answer was only given once the space was reserved or with ample
 * free space (file.c reserve_and_ack), so what can still fail is an I/O
 * error of the disk, which ext4 or xfs too report at the next fsync, not at
 * close (file_fsync does). */
static bool no_flush(const struct fs *fs, const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) == O_RDONLY || fs->sole_writer;
}

/* Make fi a handle of in, which file_open or dir_create opened: its
 * struct open_file, a pin, the open count. -ENOMEM, or 0. */
static int handle_attach(struct fs *fs, struct inode *in,
			 struct fuse_file_info *fi)
{
	struct open_file *h = open_file_new(fs, in);

	if (!h)
		return -ENOMEM;
	fi->fh = (uint64_t)(uintptr_t)h;
	inode_pin(fs, in);
	atomic_fetch_add(&fs->nopen, 1);
	return 0;
}

static struct open_file *handle_of(struct fuse_file_info *fi)
{
	return (struct open_file *)(uintptr_t)fi->fh;
}

/* Undo handle_attach and the open. */
static void handle_drop(struct fs *fs, struct inode *in,
			struct fuse_file_info *fi)
{
	open_file_free(fs, handle_of(fi));
	file_release(fs, in);
	inode_unpin(fs, in);
	atomic_fetch_sub(&fs->nopen, 1);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	struct inode *in = get_in(req, ino);
	bool keep, changed, prefetch;
	int rc;

	if (in->type != S_IFREG) {
		fuse_reply_err(req, in->type == S_IFDIR ? EISDIR : EINVAL);
		return;
	}
	if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY &&
	    kill_priv(req, fs, in))
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	rc = file_open(fs, in, fi->flags, &keep, &changed);
	if (!rc) {
		rc = handle_attach(fs, in, fi);
		if (rc)
			file_release(fs, in);
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* An open for reading on a disk: the backing's first blocks are
	 * fetched after the answer (a second pin: a RELEASE may come before
	 * that). Even with keep: the kernel may have dropped its pages. */
	prefetch = fs->disk && (fi->flags & O_ACCMODE) != O_WRONLY &&
		   !(fi->flags & O_TRUNC);
	if (prefetch)
		inode_pin(fs, in);
	set_append_io(fs, fi);
	fi->noflush = no_flush(fs, fi);
	fi->keep_cache = fs->opt.kernel_cache || keep;
	if (fuse_reply_open(req, fi) < 0) {
		handle_drop(fs, in, fi);
	} else if (changed) {
		/* Changed behind our back: the size the kernel keeps is stale
		 * too (a read stops there). Attributes only: no lock the
		 * kernel holds. */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	}
	if (prefetch) {
		file_prefetch(fs, in);
		ahead_opened(fs, in);
		inode_unpin(fs, in);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	struct fuse_entry_param e;
	struct inode *in = NULL;
	struct stat st;
	struct cred cr;
	bool existed;
	int rc;

	get_cred(req, &cr);
	rc = dir_create(fs, get_in(req, parent), name, mode & 07777, fi->flags,
			&cr, &in, &st, &existed);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* An existing file opened with O_TRUNC (truncated already): as in
	 * op_open. */
	if (existed && (fi->flags & O_TRUNC) &&
	    (fi->flags & O_ACCMODE) != O_RDONLY && kill_priv(req, fs, in))
		(void)file_fstat(fs, in, &st);
	rc = handle_attach(fs, in, fi);
	if (rc) {
		file_release(fs, in);
		inode_forget(fs, in, 1);
		fuse_reply_err(req, -rc);
		return;
	}
	set_append_io(fs, fi);
	fi->noflush = no_flush(fs, fi);
	fi->keep_cache = fs->opt.kernel_cache;
	fe_fill_entry(fs, &e, in, &st);
	if (fuse_reply_create(req, &e, fi) < 0) {
		handle_drop(fs, in, fi);
		inode_forget(fs, in, 1);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	const uint8_t *data = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	(void)fi;
	/* -serialize_reads: one read at a time, in the order they came */
	if (fs->opt.serialize_reads)
		pthread_mutex_lock(&fs->read_lock);
	rc = file_read(fs, get_in(req, ino), size, (uint64_t)off, &buf, &data,
		       &len);
	if (fs->opt.serialize_reads)
		pthread_mutex_unlock(&fs->read_lock);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, (const char *)data, len);
	free(buf);
}

struct write_reply {
	fuse_req_t req;
	size_t size;
};

static void ack_write(void *arg)
{
	struct write_reply *w = arg;

	fuse_reply_write(w->req, w->size);
}

/* The reply may go out from inside file_write (see file_ack), after which
 * req must not be touched. */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct write_reply w = { .req = req, .size = size };
	struct file_ack ack = { .fn = ack_write, .arg = &w };
	struct fs *fs = get_fs(req);
	struct inode *in = get_in(req, ino);
	int rc;

	/* The kernel's cached mode is stale then. Invalidating attributes
	 * takes no lock the kernel holds while it waits for this write. */
	if (!fi->writepage && kill_priv(req, fs, in))
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	/* Only -sharedstorage appends at the backing's own end (another
	 * mount may have appended); elsewhere the kernel's offset is right.
	 * The write's flags are the file's now (fcntl may have cleared
	 * O_APPEND since the open), and page writeback (mmap) always has
	 * its offset. */
	rc = file_write(fs, in, (const uint8_t *)buf, size, (uint64_t)off,
			fs->opt.sharedstorage && !fi->writepage &&
				(fi->flags & O_APPEND),
			&ack);
	if (ack.done)
		return;
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct inode *in = get_in(req, ino);

	fuse_reply_err(req, in->type == S_IFREG ?
				    -file_flush(get_fs(req), in, handle_of(fi))
					    : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	handle_drop(get_fs(req), get_in(req, ino), fi);
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	fuse_reply_err(req, -file_fsync(get_fs(req), get_in(req, ino),
					datasync, handle_of(fi)));
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct fs *fs = get_fs(req);
	struct inode *in = get_in(req, ino);
	int fd, rc = 0;

	(void)fi;
	fd = dirfd_get(fs, in);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	if ((datasync ? fdatasync(fd) : fsync(fd)) < 0)
		rc = errno;
	dirfd_put(fs, in);
	fuse_reply_err(req, rc);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)fi;
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -file_fallocate(get_fs(req), get_in(req, ino),
					    mode, (uint64_t)off,
					    (uint64_t)len));
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t res = 0;
	int rc;

	(void)fi;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = file_lseek(get_fs(req), get_in(req, ino), (uint64_t)off, whence,
			&res);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)res);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	fuse_reply_err(req, -xattr_set(get_fs(req), get_in(req, ino), name,
				       value, size, flags));
}

/* getxattr and listxattr: size 0 asks for the length only. */
static void reply_xattr(fuse_req_t req, struct inode *in, const char *name,
			size_t size)
{
	struct fs *fs = get_fs(req);
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = name ? xattr_get(fs, in, name, buf, size, &len) :
		    xattr_list(fs, in, buf, size, &len);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (!size)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	reply_xattr(req, get_in(req, ino), name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	reply_xattr(req, get_in(req, ino), NULL, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, -xattr_remove(get_fs(req), get_in(req, ino),
					  name));
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = fe_init,
	.lookup = op_lookup,
	.forget = fe_forget,
	.forget_multi = fe_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = fe_opendir,
	.readdir = fe_readdir,
	.readdirplus = fe_readdirplus,
	.releasedir = fe_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = fe_statfs,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
};

const struct fs_frontend fs_forward = {
	.subtype = "veilfs",
	.ops = &fs_ops,
	/* On a local backing without -sharedstorage we are the cipherdir's
	 * only writer, and every change goes through the kernel, which
	 * updates or drops what it cached of the names and inodes involved
	 * (test_fs_cache.py checks each case): names, negative lookups and
	 * attributes can be kept for long, so that a second walk of a tree
	 * (git status, make, find after ls) never reaches the daemon. */
	.cache_timeout = 3600.0,
	.sole_writer = true,
	.listing_ino = true,
	.fix_attr = fix_attr,
	.list_load = dir_list_load,
	.list_entry = dir_list_entry,
};
