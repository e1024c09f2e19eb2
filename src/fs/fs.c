// SPDX-License-Identifier: MIT
/*
 * Filesystem lifetime: fs_new/fs_free, and fs_run, which checks the
 * mountpoint, forks into the background (before any thread exists), mounts
 * in the child, reports success or failure to the parent through a pipe,
 * and serves requests with the multithreaded session loop until unmount or
 * SIGTERM/SIGINT/SIGHUP. A failed mount leaves no process behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/quota.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>

#include <linux/magic.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/log.h"
#include "fs/chan.h"
#include "fs/ctlsock.h"
#include "fs/ahead.h"
#include "fs/dir.h"
#include "fs/fe.h"
#include "fs/fs.h"
#include "fs/idle.h"
#include "fs/inode.h"
#include "fs/shared.h"

#define MAX_IO (1u << 20)
/* How long a worker polls for the next request before it sleeps (chan.c);
 * VEILFS_SPIN_US overrides it, 0 turns polling off. */
#define SPIN_US 50

/* Read-ahead of the mount, KiB, instead of the kernel's 128: fewer, larger
 * READs; a cold 1 GiB read gained 5-8%, while 1024 lost up to 15% with the
 * fastest cipher (doc/performance.md). Only root may set it. */
#define READ_AHEAD_KB 512

/* The last line for mnt wins: mounts stack. The mount itself is not
 * touched: its daemon is the caller. */
int fs_mount_devno(const char *mnt, char *out, size_t cap)
{
	char *line = NULL, path[PATH_MAX];
	size_t len = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	/* whole lines, however long (a fragment of a long one, taken for a
	 * line, could name our mount point with another device) */
	while (getline(&line, &len, f) > 0) {
		char *save = NULL, *id, *dev, *p;
		size_t o = 0;

		id = strtok_r(line, " ", &save);
		id = id ? strtok_r(NULL, " ", &save) : NULL; /* parent */
		dev = id ? strtok_r(NULL, " ", &save) : NULL;
		p = dev ? strtok_r(NULL, " ", &save) : NULL; /* root */
		p = p ? strtok_r(NULL, " ", &save) : NULL;   /* mount point */
		if (!p)
			continue;
		/* unescape \ooo (space, tab, newline, backslash) */
		for (; *p && o + 1 < sizeof(path); o++) {
			if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' &&
			    p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
			    p[3] <= '7') {
				path[o] = (char)((p[1] - '0') << 6 |
						 (p[2] - '0') << 3 | (p[3] - '0'));
				p += 4;
			} else {
				path[o] = *p++;
			}
		}
		path[o] = '\0';
		if (!strcmp(path, mnt) && strlen(dev) < cap) {
			strcpy(out, dev);
			rc = 0;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* chan_after_init: raise the mount's read-ahead (the INIT reply has just
 * set it to at most the kernel's default). */
static void raise_read_ahead(void *arg)
{
	struct fs *fs = arg;
	char dev[64], path[128], cur[32];
	FILE *f;
	long kb = 0;

	if (geteuid() != 0 || fs_mount_devno(fs->mountpoint, dev, sizeof(dev)))
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "r+e");
	if (!f)
		return;
	if (fgets(cur, sizeof(cur), f))
		kb = strtol(cur, NULL, 10);
	if (kb < READ_AHEAD_KB) {
		rewind(f);
		fprintf(f, "%d\n", READ_AHEAD_KB);
	}
	if (fclose(f) != 0)
		log_dbg("cannot set %s: %s", path, strerror(errno));
	else
		log_dbg("read-ahead of %s: %d KiB", dev, READ_AHEAD_KB);
}

/* Whether the cipherdir lies on a local filesystem, where inode numbers are
 * stable (a hard link is one inode) and ctime changes with every write:
 * what the long caching of a sole writer (fe.h) relies on. A network or FUSE
 * backing may show a hard link as two files or keep stale attributes of its
 * own (sshfs does both), and other hosts may write it. */
static bool backing_is_local(unsigned long type)
{
	static const unsigned long local[] = {
		TMPFS_MAGIC, RAMFS_MAGIC, EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,
		BTRFS_SUPER_MAGIC, F2FS_SUPER_MAGIC,
		0x2fc12fc1, /* zfs */
		0xca451a4e, /* bcachefs */
	};
	size_t i;

	for (i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if (type == local[i])
			return true;
	return false;
}

/* Whether an overwrite of bytes already written (allocated, or reserved
 * by delayed allocation) never needs new space on the backing: ext2/3/4 and
 * tmpfs. Not on a copy-on-write filesystem (btrfs, zfs, bcachefs, f2fs,
 * xfs with a shared extent), where every overwrite takes new space. */
static bool backing_in_place(unsigned long type)
{
	return type == EXT4_SUPER_MAGIC || type == TMPFS_MAGIC ||
	       type == RAMFS_MAGIC;
}

/* Whether a write must not be answered early on an fallocate reservation
 * (file.c reserve_and_ack): the backing allocates at writeback (delayed
 * allocation), so that an fallocate takes blocks apart from those still
 * in the page cache (ext4, xfs); or its fallocate reserves nothing, so
 * that the write could still fail after the answer (zfs: mode 0 only
 * checks the free space and leaves the file sparse). */
static bool backing_delalloc(unsigned long type)
{
	return type == EXT4_SUPER_MAGIC || type == XFS_SUPER_MAGIC ||
	       type == 0x2fc12fc1; /* zfs */
}

/* Whether no disk quota can refuse a write to the backing: quotactl_fd's
 * Q_GETINFO says quota accounting is off for every kind (user, group,
 * project). Q_GETINFO asks the filesystem's own state, so it also answers
 * for xfs (Q_GETFMT only knows the generic quota code's, always "off" on
 * xfs). Any other answer (a kernel before 5.14, a backing without the
 * quota interface) counts as a quota that might be on. Needs no
 * privilege. */
static bool quotas_off(int fd)
{
#ifdef SYS_quotactl_fd
	static const int types[] = { USRQUOTA, GRPQUOTA, PRJQUOTA };
	struct dqinfo info;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		/* QCMD's int shift overflows: Q_GETINFO has bit 23 set */
		unsigned cmd = (unsigned)Q_GETINFO << SUBCMDSHIFT |
			       ((unsigned)types[i] & SUBCMDMASK);

		if (syscall(SYS_quotactl_fd, fd, (int)cmd, 0, &info) == 0 ||
		    errno != ESRCH)
			return false;
	}
	return true;
#else
	(void)fd;
	return false;
#endif
}

/* What the kernel may cache (fs_cache_timeout, fs->sole_writer): as the
 * frontend says on a local backing, as gocryptfs elsewhere, nothing with
 * -sharedstorage. */
static void set_caching(struct fs *fs)
{
	struct statfs sf;
	unsigned long type = 0;
	bool local;

	if (fstatfs(fs->root_fd, &sf) == 0)
		type = (unsigned long)sf.f_type;
	local = backing_is_local(type);
	fs->local = local;
	fs->in_place = backing_in_place(type);
	fs->disk = local && type != TMPFS_MAGIC && type != RAMFS_MAGIC;
	fs->delalloc = backing_delalloc(type);
	fs->ack_on_room = fs->delalloc && local && quotas_off(fs->root_fd);
	if (fs->delalloc)
		log_dbg("writes past the end answered %s",
			fs->ack_on_room ? "early while the backing has room" :
			"when written (disk quotas may be on)");
	fs->cache_timeout = fs->fe->cache_timeout;
	if (!local && fs->cache_timeout > FS_SHORT_TIMEOUT)
		fs->cache_timeout = FS_SHORT_TIMEOUT;
	fs->sole_writer = fs->fe->sole_writer && local;
	if (fs->opt.sharedstorage) {
		fs->cache_timeout = 0.0;
		fs->sole_writer = false;
	}
	log_dbg("kernel caches for %g s%s", fs->cache_timeout,
		fs->sole_writer ? ", pages and listings across opens" : "");
}

static unsigned spin_us(void)
{
	const char *e = getenv("VEILFS_SPIN_US");
	char *end;
	unsigned long v;

	if (!e || !*e)
		return SPIN_US;
	v = strtoul(e, &end, 10);
	return *end || v > 10000 ? SPIN_US : (unsigned)v;
}

static int fwd_encrypt_path(void *arg, const char *path, char **out)
{
	return dir_encrypt_path(arg, path, out);
}

static int fwd_decrypt_path(void *arg, const char *path, char **out)
{
	return dir_decrypt_path(arg, path, out);
}

static const struct ctlsock_ops fwd_ctl_ops = {
	.encrypt_path = fwd_encrypt_path,
	.decrypt_path = fwd_decrypt_path,
};

static char *dup_or_null(const char *s, bool *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = true;
	return d;
}

int fs_new(struct fs **out, const struct fs_options *opt,
	   const struct fs_frontend *fe, const void *fe_arg,
	   struct content *content, struct names *names)
{
	const struct names_params *np = names_params(names);
	struct fs *fs;
	bool fail = false;
	int rc;

	*out = NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->opt = *opt;
	fs->cipherdir = dup_or_null(opt->cipherdir, &fail);
	fs->mountpoint = dup_or_null(opt->mountpoint, &fail);
	fs->fsname = dup_or_null(opt->fsname, &fail);
	fs->fuse_opts = dup_or_null(opt->fuse_opts, &fail);
	if (fail || !fs->cipherdir || !fs->mountpoint) {
		fs_free(fs);
		return -ENOMEM;
	}
	fs->opt.cipherdir = fs->cipherdir;
	fs->opt.mountpoint = fs->mountpoint;
	fs->opt.fsname = fs->fsname;
	fs->opt.fuse_opts = fs->fuse_opts;
	fs->content = content;
	fs->names = names;
	fs->plaintext = np->plaintext;
	fs->diriv = np->diriv;
	fs->cbs = content_cipher_bs(content);
	fs->root_fd = -1;
	/* Bare listings (fe.c) start with a probe of a small directory. */
	atomic_init(&fs->full_listings, 1);
	fs->as_root_chown = opt->allow_other && geteuid() == 0;
	pthread_mutex_init(&fs->read_lock, NULL);
	fs->ctl_ops = &fwd_ctl_ops;
	fs->ctl_arg = fs;
	fs->fe = fe;
	if (fe->read_only)
		fs->opt.ro = true;
	rc = fe->setup ? fe->setup(fs, fe_arg) : 0;
	if (rc) {
		fs_free(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	if (fs->htab)
		fe_fini(fs);
	if (fs->fe && fs->fe->teardown)
		fs->fe->teardown(fs);
	inode_table_fini(fs);
	if (fs->root_fd >= 0)
		close(fs->root_fd);
	free(fs->cipherdir);
	free(fs->mountpoint);
	free(fs->fsname);
	free(fs->fuse_opts);
	pthread_mutex_destroy(&fs->read_lock);
	free(fs);
}

static int check_mountpoint(struct fs *fs)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (stat(fs->mountpoint, &st) < 0) {
		log_err("mountpoint '%s': %s", fs->mountpoint,
			strerror(errno));
		return FS_ERR_MOUNTPOINT;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("mountpoint '%s' is not a directory", fs->mountpoint);
		return FS_ERR_MOUNTPOINT;
	}
	if (fs->opt.nonempty)
		return 0;
	d = opendir(fs->mountpoint);
	if (!d) {
		log_err("mountpoint '%s': %s", fs->mountpoint,
			strerror(errno));
		return FS_ERR_MOUNTPOINT;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			log_err("mountpoint '%s' is not empty",
				fs->mountpoint);
			rc = FS_ERR_MOUNTPOINT;
			break;
		}
	}
	closedir(d);
	return rc;
}

/* Append s to the option string, escaping ',' and '\' for libfuse. */
static void opt_escape(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);

	for (; *s && n + 2 < cap; s++) {
		if (*s == ',' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = 0;
}

/* The last max_read=N among comma-separated opts, if any, into *out. */
static void last_max_read(const char *opts, unsigned *out)
{
	const char *p;
	unsigned long v;
	char *end;

	for (p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, "max_read=", 9))
			continue;
		v = strtoul(p + 9, &end, 10);
		if ((*end == ',' || !*end) && v <= UINT_MAX)
			*out = (unsigned)v;
	}
}

static int build_opts(struct fs *fs, char *o, size_t cap)
{
	size_t n;

	/* FUSE INIT must answer with the max_read the mount has: ours, or
	 * the user's (-o, -ko) */
	fs->max_read = MAX_IO;
	last_max_read(fs->fuse_opts, &fs->max_read);
	last_max_read(fs->opt.kernel_opts, &fs->max_read);

	snprintf(o, cap, "fsname=");
	opt_escape(o, cap, fs->fsname ? fs->fsname : fs->cipherdir);
	n = strlen(o);
	snprintf(o + n, cap - n,
		 ",subtype=%s,max_read=%u%s%s%s%s%s%s%s%s%s",
		 fs->fe->subtype, MAX_IO,
		 /* Only other users need the kernel's permission checks: the
		  * mounting user's own accesses are checked by the backing
		  * filesystem, and default_permissions costs a GETATTR of the
		  * parent on every create, rename and unlink (gocryptfs does
		  * the same). ACLs are enforced by the kernel, which needs
		  * them too. */
		 fs->opt.allow_other ? ",allow_other,default_permissions"
		 : fs->opt.acl	     ? ",default_permissions"
				     : "",
		 fs->opt.ro ? ",ro" : "",
		 fs->opt.dev ? ",dev" : "",
		 fs->opt.suid ? ",suid" : "",
		 fs->opt.noexec ? ",noexec" : "",
		 fs->fuse_opts && *fs->fuse_opts ? "," : "",
		 fs->fuse_opts ? fs->fuse_opts : "",
		 /* -ko last: as with gocryptfs, it has the last word */
		 fs->opt.kernel_opts && *fs->opt.kernel_opts ? "," : "",
		 fs->opt.kernel_opts ? fs->opt.kernel_opts : "");
	return strlen(o) + 1 < cap ? 0 : -E2BIG;
}

static void report(int fd, int status)
{
	if (fd < 0)
		return;
	if (write(fd, &status, sizeof(status)) != sizeof(status))
		log_err("could not report mount status to parent");
	close(fd);
}

static void default_if_ignored(int sig)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
		signal(sig, SIG_DFL);
}

static void to_devnull(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/* Raise the soft open-file limit to the hard one and give a quarter of it
 * (64..1024) to the directory-fd cache; open files need the rest. */
static unsigned fd_budget(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 256;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	n = rl.rlim_cur / 4;
	if (n < 64)
		n = 64;
	if (n > 1024)
		n = 1024;
	return (unsigned)n;
}

bool fs_fuse_opts_ok(const char *fuse_opts)
{
	char prog[] = "veilfs", o[] = "-o";
	char *argv[] = { prog, o, (char *)(uintptr_t)fuse_opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fuse_lowlevel_ops ops;
	struct fuse_session *se;

	if (!fuse_opts || !*fuse_opts)
		return true;
	memset(&ops, 0, sizeof(ops));
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	if (!se)
		return false;
	fuse_session_destroy(se);
	return true;
}

/* Worker threads at most (libfuse's default is 10). */
#define FS_MAX_THREADS 64

int fs_run(struct fs *fs, bool *is_daemon_parent)
{
	char optstr[4096];
	char *argv[4];
	struct fuse_args args;
	struct fuse_loop_config *cfg = NULL;
	struct fuse_session *se = NULL;
	struct fuse_lowlevel_ops ops;
	struct chan *chan = NULL;
	struct ctlsock *ctl = NULL;
	struct idle *idle = NULL;
	int pfd[2] = { -1, -1 }, rc, argc = 0, status;
	bool mounted = false, sig = false, ready_early;
	pid_t pid;

	*is_daemon_parent = false;
	fs->root_fd = open(fs->cipherdir,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fs->root_fd < 0) {
		log_err("cannot open cipherdir '%s': %s", fs->cipherdir,
			strerror(errno));
		return FS_ERR_CIPHERDIR;
	}
	/* A sign to -fsck -repair that a daemon serves this cipherdir, also
	 * when mountinfo does not name it (-fsname); where the backing has
	 * no flock, there is no sign. */
	(void)flock(fs->root_fd, LOCK_SH | LOCK_NB);
	set_caching(fs);
	rc = inode_table_init(fs);
	if (rc)
		return rc == -ENOMEM ? -ENOMEM : FS_ERR_CIPHERDIR;
	if (fs->opt.sharedstorage)
		shared_probe(fs);
	fs->lru_max = fd_budget();
	rc = check_mountpoint(fs);
	if (rc)
		return rc;
	if (build_opts(fs, optstr, sizeof(optstr))) {
		log_err("mount options too long");
		return FS_ERR_OTHER;
	}

	if (!fs->opt.foreground) {
		if (pipe2(pfd, O_CLOEXEC) < 0)
			return FS_ERR_OTHER;
		pid = fork();
		if (pid < 0) {
			close(pfd[0]);
			close(pfd[1]);
			return FS_ERR_OTHER;
		}
		if (pid > 0) {
			ssize_t r;

			close(pfd[1]);
			*is_daemon_parent = true;
			do {
				r = read(pfd[0], &status, sizeof(status));
			} while (r < 0 && errno == EINTR);
			close(pfd[0]);
			if (r != sizeof(status))
				return FS_ERR_OTHER;
			return status;
		}
		close(pfd[0]);
		pfd[0] = -1;
		setsid();
	}

	/* In the serving process: its thread must not be lost in a fork. */
	if (fs->opt.ctlsock) {
		rc = ctlsock_start(&ctl, fs->opt.ctlsock, fs->ctl_ops,
				   fs->ctl_arg);
		if (rc) {
			log_err("ctlsock: cannot listen on '%s': %s",
				fs->opt.ctlsock, strerror(-rc));
			rc = FS_ERR_CTLSOCK;
			goto fail;
		}
	}
	/* The kernel already applied the caller's umask to every mode it
	 * sends; ours must not mask it again. */
	umask(0);
	argv[argc++] = (char *)"veilfs";
	argv[argc++] = (char *)"-o";
	argv[argc++] = optstr;
	if (fs->opt.debug)
		argv[argc++] = (char *)"-d";
	args.argc = argc;
	args.argv = argv;
	args.allocated = 0;
	ops = *fs->fe->ops; /* libfuse keeps a copy */
	if (fs->opt.noxattr) {
		/* libfuse answers ENOSYS for an operation without a handler,
		 * and the kernel stops sending it: users see EOPNOTSUPP */
		ops.getxattr = NULL;
		ops.setxattr = NULL;
		ops.listxattr = NULL;
		ops.removexattr = NULL;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	fuse_opt_free_args(&args);
	if (!se) {
		log_err("could not create FUSE session (bad -o options?)");
		rc = FS_ERR_OTHER;
		goto fail;
	}
	fs->se = se;
	/* libfuse leaves a signal that was ignored when we started ignored:
	 * a daemon started as a script's background job (SIGINT ignored)
	 * must still stop on SIGINT, as gocryptfs does */
	default_if_ignored(SIGINT);
	default_if_ignored(SIGTERM);
	default_if_ignored(SIGHUP);
	if (fuse_set_signal_handlers(se) < 0) {
		rc = FS_ERR_OTHER;
		goto fail;
	}
	sig = true;
	/* the signal -notifypid sends: never the end of the daemon, also when
	 * it reaches the wrong process (gocryptfs ignores it) */
	signal(SIGUSR1, SIG_IGN);
	if (fuse_session_mount(se, fs->mountpoint) < 0) {
		log_err("could not mount on '%s'", fs->mountpoint);
		rc = FS_ERR_MOUNTPOINT;
		goto fail;
	}
	mounted = true;
	rc = chan_attach(&chan, se, spin_us());
	if (rc)
		log_warn("using libfuse's request I/O: %s", strerror(-rc));
	else
		chan_after_init(chan, raise_read_ahead, fs);
	if (fs->opt.idle_ns > 0) {
		rc = idle_start(&idle, fs, chan, fs->opt.idle_ns);
		if (rc) {
			log_err("-idle: %s", strerror(-rc));
			rc = FS_ERR_OTHER;
			goto fail;
		}
	}
	/* In the background the ready line still reaches the terminal, as
	 * gocryptfs's does; -notifypid's signal goes only once detached. */
	ready_early = !fs->opt.foreground && !fs->opt.detach;
	if (ready_early && fs->opt.on_ready)
		fs->opt.on_ready(fs->opt.on_ready_arg);
	if (!fs->opt.foreground || fs->opt.detach) {
		if (fs->opt.detach)
			setsid();
		if (chdir("/") < 0)
			log_warn("chdir /: %s", strerror(errno));
		if (!fs->opt.nosyslog) {
			log_init("veilfs", true, log_get_level());
			to_devnull();
		}
		if (!fs->opt.foreground) {
			report(pfd[1], 0);
			pfd[1] = -1;
		}
	}
	if (!ready_early && fs->opt.on_ready)
		fs->opt.on_ready(fs->opt.on_ready_arg);
	log_dbg("serving '%s' on '%s'", fs->cipherdir, fs->mountpoint);

	/* Up to FS_MAX_THREADS requests in progress: a backing syscall that
	 * blocks long (another mount's lock, see shared.c; a stalled network
	 * backing) holds one thread, and the others serve the rest. */
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		log_err("out of memory");
		rc = FS_ERR_OTHER;
		goto fail;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_idle_threads(cfg, 16);
	fuse_loop_cfg_set_max_threads(cfg, FS_MAX_THREADS);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	/* A positive value is the signal that ended the loop: clean exit. */
	rc = rc < 0 ? FS_ERR_OTHER : 0;
	log_dbg("writes answered before they were written: %lu on a "
		"reservation, %lu on free space",
		atomic_load(&fs->acks_reserved),
		atomic_load(&fs->acks_on_room));
	idle_stop(idle);
	ctlsock_stop(ctl);
	ahead_stop(fs);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	chan_free(chan);
	fs->se = NULL;
	return rc;
fail:
	idle_stop(idle);
	ctlsock_stop(ctl);
	ahead_stop(fs);
	if (mounted)
		fuse_session_unmount(se);
	if (sig)
		fuse_remove_signal_handlers(se);
	if (se)
		fuse_session_destroy(se);
	chan_free(chan);
	fs->se = NULL;
	if (pfd[1] >= 0) {
		/* The child of a daemonizing fs_run: tell the parent, leave. */
		report(pfd[1], rc);
		_exit(1);
	}
	return rc;
}
