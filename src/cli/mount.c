// SPDX-License-Identifier: MIT
/*
 * Mounting (the action without an action flag): check CIPHERDIR and
 * MOUNTPOINT, build the crypto chain, hand content and names to the FUSE
 * daemon (src/fs) with the frontend of the mode (forward, or -reverse with
 * its exclusion list), and map its result to an exit code. Without -fg the
 * daemon forks into the background once the mount is ready.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "common/ignore.h"
#include "common/log.h"
#include "common/secmem.h"
#include "exitcodes.h"
#include "fs/fs.h"
#include "fs/rfs.h"

struct ready {
	struct cli_chain *ch;
	const struct args *a;
};

static void on_ready(void *arg)
{
	struct ready *r = arg;
	struct cli_chain *ch = r->ch;

	secmem_relock_all();
	log_info("content cipher %s, implementation %s%s",
		 aead_cipher_name(aead_impl_cipher(ch->impl)),
		 aead_impl_name(ch->impl), ch->forced ? " (forced)" : "");
	if (!ch->forced && ch->figures[0])
		log_info("implementation benchmark: %s", ch->figures);
	log_info("Filesystem mounted and ready.");
	if (r->a->notifypid > 0) {
		/* gocryptfs's own daemonizing: its parent waits for USR1,
		 * and the -fg child it started logs to syslog. */
		if (kill((pid_t)r->a->notifypid, SIGUSR1) < 0)
			log_err("-notifypid %ld: %s", r->a->notifypid,
				strerror(errno));
	}
}

/* -force_owner UID:GID, each a decimal number below 2^32. */
static int parse_owner(const char *s, unsigned *uid, unsigned *gid)
{
	const char *colon = strchr(s, ':');
	unsigned long long v[2];
	const char *part[2];

	if (!colon) {
		cli_err("-force_owner must be in the form UID:GID, got '%s'", s);
		return EXIT_USAGE;
	}
	part[0] = s;
	part[1] = colon + 1;
	for (int i = 0; i < 2; i++) {
		const char *p = part[i];
		size_t n = i ? strlen(p) : (size_t)(colon - s);

		v[i] = 0;
		for (size_t k = 0; k < n; k++) {
			if (p[k] < '0' || p[k] > '9' || v[i] > UINT_MAX)
				n = 0;
			else
				v[i] = v[i] * 10 + (unsigned)(p[k] - '0');
		}
		if (n == 0 || v[i] > UINT_MAX) {
			cli_err("-force_owner: cannot parse %s '%.*s' as a "
				"non-negative integer", i ? "GID" : "UID",
				(int)(i ? strlen(p) : (size_t)(colon - s)), p);
			return EXIT_USAGE;
		}
	}
	*uid = (unsigned)v[0];
	*gid = (unsigned)v[1];
	return 0;
}

/* An absolute path for -ctlsock: the daemon leaves its working directory
 * and removes the socket at unmount. malloc'ed, NULL on ENOMEM. */
static char *abs_path(const char *p)
{
	char cwd[PATH_MAX], *out = NULL;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s/%s", cwd, p) < 0)
		return NULL;
	return out;
}

static int check_mountpoint(const struct args *a, const char *mnt,
			    const char *cipherdir)
{
	struct stat st;
	size_t clen = strlen(cipherdir);
	int rc;

	if (stat(mnt, &st) != 0) {
		cli_err("Invalid mountpoint: stat '%s': %s", mnt,
			strerror(errno));
		return EXIT_MOUNTPOINT;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_err("Invalid mountpoint: '%s' is not a directory", mnt);
		return EXIT_MOUNTPOINT;
	}
	if (strncmp(mnt, cipherdir, clen) == 0 &&
	    (mnt[clen] == '/' || mnt[clen] == '\0')) {
		cli_err("Invalid mountpoint: '%s' is inside cipherdir '%s'",
			mnt, cipherdir);
		return EXIT_MOUNTPOINT;
	}
	if (!a->nonempty) {
		rc = cli_dir_nonempty(mnt);
		if (rc) {
			cli_err("Invalid mountpoint: '%s' %s", mnt,
				rc > 0 ? "is not empty (use -nonempty)"
				       : strerror(-rc));
			return EXIT_MOUNTPOINT;
		}
	}
	return 0;
}

static void fill_options(struct fs_options *fo, const struct args *a)
{
	fo->foreground = a->fg;
	fo->nosyslog = a->nosyslog;
	fo->ro = a->ro;
	fo->allow_other = a->allow_other;
	fo->nonempty = a->nonempty;
	fo->noprealloc = a->noprealloc;
	fo->sharedstorage = a->sharedstorage;
	fo->debug = a->fusedebug;
	fo->quiet = a->quiet;
	fo->fsname = a->fsname;
	fo->fuse_opts = a->fuse_opts;
	/* gocryptfs's precedence: -nodev, -nosuid, -noexec win */
	fo->dev = a->dev && !a->nodev;
	fo->suid = a->suid && !a->nosuid;
	fo->noexec = a->noexec;
	fo->kernel_opts = a->ko;
	/* other mounts change the files: pages kept across opens go stale
	 * when a change keeps the size and the mtime */
	fo->kernel_cache = a->kernel_cache && !a->sharedstorage;
	if (a->kernel_cache && a->sharedstorage)
		cli_err("-kernel_cache is ignored with -sharedstorage: other "
			"mounts change the files");
	fo->acl = a->acl;
	fo->noxattr = a->noxattr;
	fo->serialize_reads = a->serialize_reads;
	/* -idle is for forward mode only; gocryptfs 2.3 ignores it in
	 * reverse mode (a backup reads the view when it likes). */
	fo->idle_ns = a->reverse ? 0 : a->idle_ns;
	fo->badname = a->badname;
	fo->nbadname = a->nbadname;
}

/* The -exclude-from files into ig. */
static int read_exclude_files(const struct args *a, struct ignore *ig)
{
	for (size_t i = 0; i < a->exclude_from.n; i++) {
		const char *path = a->exclude_from.v[i];
		char *text = NULL;
		size_t cap = 0, len = 0;
		FILE *f = fopen(path, "re");
		int rc = 0;

		if (!f) {
			cli_err("Error reading exclusion patterns: '%s': %s",
				path, strerror(errno));
			return EXIT_EXCLUDE;
		}
		len = (size_t)getdelim(&text, &cap, '\0', f);
		if (ferror(f))
			rc = -EIO;
		else if (len != (size_t)-1)
			rc = ignore_add_text(ig, text, len);
		fclose(f);
		free(text);
		if (rc) {
			cli_err("Error reading exclusion patterns: '%s': %s",
				path, rc == -EINVAL ? "a line is too long"
						    : strerror(-rc));
			return EXIT_EXCLUDE;
		}
	}
	return 0;
}

/* spec §5.6: -exclude X is the anchored pattern /X, -exclude-wildcard and
 * -exclude-from lines are used as they are. *out is NULL when nothing is
 * excluded. */
static int exclusion(const struct args *a, struct ignore **out)
{
	struct ignore *ig = NULL;
	char line[IGNORE_LINE_MAX + 2];
	int rc = 0, ex = 0;

	*out = NULL;
	if (!a->exclude.n && !a->exclude_wildcard.n && !a->exclude_from.n)
		return 0;
	if (ignore_new(&ig))
		return EXIT_OTHER;
	for (size_t i = 0; !rc && i < a->exclude.n; i++) {
		const char *p = a->exclude.v[i];

		/* an empty item is "/": everything (as with gocryptfs) */
		if (snprintf(line, sizeof(line), "/%s", p) >= (int)sizeof(line))
			rc = -EINVAL;
		else
			rc = ignore_add(ig, line, strlen(line));
	}
	for (size_t i = 0; !rc && i < a->exclude_wildcard.n; i++)
		rc = ignore_add(ig, a->exclude_wildcard.v[i],
				strlen(a->exclude_wildcard.v[i]));
	if (rc) {
		cli_err("Error reading exclusion patterns: %s",
			rc == -EINVAL ? "a pattern is too long" : strerror(-rc));
		ex = EXIT_EXCLUDE;
	} else {
		ex = read_exclude_files(a, ig);
	}
	if (ex)
		ignore_free(ig);
	else
		*out = ig;
	return ex;
}

static int run_fs(struct cli_chain *ch, const struct args *a,
		  const char *cipherdir, const char *mnt)
{
	struct fs_options fo = { .cipherdir = cipherdir, .mountpoint = mnt };
	struct ready r = { .ch = ch, .a = a };
	struct rfs_options ro = {
		.one_file_system = a->one_file_system,
		/* spec §5.6: not with -config */
		.map_conf = !a->config,
	};
	struct ignore *ig = NULL;
	struct fs *fs = NULL;
	char *ctl = NULL;
	bool parent = false;
	int rc, ex = 0;

	fill_options(&fo, a);
	if (a->force_owner) {
		ex = parse_owner(a->force_owner, &fo.owner_uid, &fo.owner_gid);
		if (ex)
			return ex;
		fo.force_owner = true;
		fo.allow_other = true; /* as gocryptfs: implied */
	}
	if (a->ctlsock) {
		ctl = abs_path(a->ctlsock);
		if (!ctl)
			return EXIT_OTHER;
		fo.ctlsock = ctl;
	}
	fo.on_ready = on_ready;
	fo.on_ready_arg = &r;
	/* gocryptfs's parent starts its child with -fg -notifypid and waits
	 * for USR1, then exits: the child must hold nothing of the caller
	 * (its output pipes, its session, its working directory) */
	fo.detach = a->fg && a->notifypid > 0;
	if (a->reverse) {
		ex = exclusion(a, &ig);
		if (ex) {
			free(ctl);
			return ex;
		}
		ro.exclude = ig;
		rc = fs_new(&fs, &fo, &fs_reverse, &ro, ch->content,
			    ch->names);
	} else {
		rc = fs_new(&fs, &fo, &fs_forward, NULL, ch->content,
			    ch->names);
	}
	if (rc) {
		cli_err("setting up the filesystem failed: %s", strerror(-rc));
		ignore_free(ig);
		free(ctl);
		return EXIT_OTHER;
	}
	rc = fs_run(fs, &parent);
	if (rc == FS_ERR_MOUNTPOINT) {
		cli_err("Mounting on '%s' failed", mnt);
		ex = EXIT_MOUNTPOINT;
	} else if (rc == FS_ERR_CIPHERDIR) {
		cli_err("Cannot open cipherdir '%s'", cipherdir);
		ex = EXIT_CIPHERDIR;
	} else if (rc == FS_ERR_CTLSOCK) {
		cli_err("Cannot create the control socket '%s'", ctl);
		ex = EXIT_CTLSOCK;
	} else if (rc) {
		cli_err("Mount failed: %s",
			rc > -1000 ? strerror(-rc) : "see the log");
		ex = EXIT_OTHER;
	}
	fs_free(fs);
	free(ctl);
	ignore_free(ig);
	return ex;
}

int cli_mount(const struct args *a)
{
	struct cli_chain ch;
	char *cipherdir = NULL, *mnt = NULL;
	int ex;

	memset(&ch, 0, sizeof(ch));
	if (a->npos != 2) {
		cli_err("Wrong number of arguments (have %zu, want 2)",
			a->npos);
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	if (!a->reverse && a->exclude.n) {
		cli_err("-exclude only works in reverse mode");
		return EXIT_EXCLUDE;
	}
	if (a->acl && a->noxattr) {
		cli_err("-acl needs extended attributes: not with -noxattr");
		return EXIT_USAGE;
	}
	if (!fs_fuse_opts_ok(a->fuse_opts)) {
		cli_err("-o %s: not a veilfs flag, and FUSE refuses it",
			a->fuse_opts);
		return EXIT_USAGE;
	}
	ex = cli_check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	cipherdir = realpath(a->pos[0], NULL);
	if (!cipherdir) {
		cli_err("Invalid cipherdir: '%s': %s", a->pos[0],
			strerror(errno));
		return EXIT_CIPHERDIR;
	}
	mnt = realpath(a->pos[1], NULL);
	if (!mnt) {
		cli_err("Invalid mountpoint: '%s': %s", a->pos[1],
			strerror(errno));
		ex = EXIT_MOUNTPOINT;
		goto out;
	}
	ex = check_mountpoint(a, mnt, cipherdir);
	if (ex)
		goto out;
	ex = cli_chain_open(&ch, a, cipherdir);
	/* spec §5.1: the deterministic view is safe with AES-SIV only */
	if (!ex && a->reverse && ch.cipher != AEAD_AES_SIV_512) {
		cli_err("AES-SIV is required by reverse mode, but not enabled "
			"in the config file");
		ex = EXIT_USAGE;
	}
	if (!ex)
		ex = run_fs(&ch, a, cipherdir, mnt);
out:
	cli_chain_close(&ch);
	free(cipherdir);
	free(mnt);
	return ex;
}
