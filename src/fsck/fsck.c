// SPDX-License-Identifier: MIT
/*
 * One fsck run: the walk (walk.c) feeding the file checkers (check.c),
 * problem records and their counting as gocryptfs 2.3 counts them (spec
 * §6.3: every corrupt name, directory IV, file, symlink and xattr is one),
 * then with -repair the repairs (repair.c).
 *
 * VEILFS_FSCK_TEST (tests only) takes comma-separated hooks: kill=N sends
 * SIGKILL to this process at the Nth state-changing repair step, int=N
 * sends SIGINT there, pause=N stops the walk after N files (printing
 * "fsck: test pause" on stderr) until a signal stops the run, seg=N cuts
 * files into segments of N blocks (to test segments on small files).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsck/internal.h"

bool fctx_stopped(struct fctx *x)
{
	if (__atomic_load_n(&x->stopping, __ATOMIC_RELAXED))
		return true;
	if (x->o->stop && *x->o->stop) {
		__atomic_store_n(&x->stopping, true, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

static const char *const kind_what[] = {
	[FP_DIRIV] = "dir",
	[FP_NAME] = "entry",
	[FP_NOSIDECAR] = "entry",
	[FP_SIDECAR] = "entry",
	[FP_HASH] = "entry",
	[FP_ORPHAN] = "entry",
	[FP_RMDIR] = "entry",
	[FP_TEMP] = "entry",
	[FP_PARKED] = "entry",
	[FP_SYMLINK] = "symlink",
	[FP_XNAME] = "file",
	[FP_XVALUE] = "file",
	[FP_CONTENT] = "file",
	[FP_SHORT] = "file",
	[FP_HDRONLY] = "file",
	[FP_SKIPPED] = "file",
};

struct fproblem *fproblem_new(enum fp_kind kind, struct fnode *dir,
			      const char *cname, const char *pname)
{
	struct fproblem *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->kind = kind;
	p->what = kind_what[kind];
	p->counted = true;
	p->cname = cname ? strdup(cname) : NULL;
	p->pname = pname ? strdup(pname) : NULL;
	if ((cname && !p->cname) || (pname && !p->pname)) {
		fproblem_free(p);
		return NULL;
	}
	p->dir = fnode_get(dir);
	return p;
}

void fproblem_free(struct fproblem *p)
{
	if (!p)
		return;
	fnode_put(p->dir);
	free(p->cname);
	free(p->pname);
	free(p->xname);
	free(p->bad);
	free(p);
}

static bool entry_kind(enum fp_kind k)
{
	return k == FP_NAME || k == FP_NOSIDECAR || k == FP_SIDECAR ||
	       k == FP_HASH || k == FP_ORPHAN || k == FP_RMDIR ||
	       k == FP_TEMP || k == FP_PARKED;
}

/* gocryptfs cannot see the object of p (a name on its path does not
 * decrypt): it does not count what is wrong with it, nor do we. */
static bool hidden(const struct fproblem *p)
{
	for (const struct fnode *d = p->dir; d && d->parent; d = d->parent)
		if (!d->pname)
			return true;
	return p->cname && !p->pname && !entry_kind(p->kind);
}

void fctx_vproblem(struct fctx *x, struct fproblem *p, const char *fmt,
		   va_list ap)
{
	char msg[1024], *obj;
	bool hid = p->counted && hidden(p);

	if (hid)
		p->counted = false;
	if (!fctx_stopped(x) && (p->counted || !x->o->quiet)) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		obj = fo_object(p->what, p->dir, p->cname, p->pname);
		fo_line(x, "fsck: %s%s: %s%s", p->counted ? "" : "note: ",
			obj ? obj : "?", msg,
			hid ? " (not counted: hidden from the plaintext view "
			      "by a name that does not decrypt)" : "");
		free(obj);
	}
	pthread_mutex_lock(&x->plock);
	*x->ptail = p;
	x->ptail = &p->next;
	if (p->counted && p->kind == FP_SKIPPED)
		x->nskipped++;
	else if (p->counted)
		x->ncorrupt++;
	pthread_mutex_unlock(&x->plock);
}

void fctx_problem(struct fctx *x, struct fproblem *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fctx_vproblem(x, p, fmt, ap);
	va_end(ap);
}

void fctx_add_iv(struct fctx *x, const uint8_t iv[static NAMES_DIRIV_LEN])
{
	if (x->nivs == x->capivs) {
		size_t nc = x->capivs ? x->capivs * 2 : 64;
		uint8_t(*n)[NAMES_DIRIV_LEN] = realloc(x->ivs, nc * sizeof(*n));

		if (!n)
			return; /* a candidate fewer */
		x->ivs = n;
		x->capivs = nc;
	}
	memcpy(x->ivs[x->nivs++], iv, NAMES_DIRIV_LEN);
}

static void test_hooks(struct fctx *x)
{
	const char *e = getenv("VEILFS_FSCK_TEST");
	char *copy, *tok, *save = NULL;

	if (!e || !(copy = strdup(e)))
		return;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		long v = 0;
		char *eq = strchr(tok, '=');

		if (eq)
			v = strtol(eq + 1, NULL, 10);
		if (!strncmp(tok, "kill=", 5))
			x->kill_step = v;
		else if (!strncmp(tok, "int=", 4))
			x->int_step = v;
		else if (!strncmp(tok, "pause=", 6))
			x->pause_files = v;
		else if (!strncmp(tok, "seg=", 4))
			x->seg_blocks = v;
	}
	free(copy);
}

static unsigned pick_threads(unsigned want)
{
	long n = want ? (long)want : sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	if (n > 64)
		n = 64;
	return (unsigned)n;
}

int fsck_run(const struct fsck_opts *o, struct content *c, struct names *n,
	     struct fsck_result *r, char *err, size_t errlen)
{
	struct fctx x = { 0 };
	pthread_t prog;
	bool have_prog = false, any = false;
	struct stat st;
	int rc;

	memset(r, 0, sizeof(*r));
	err[0] = '\0';
	x.o = o;
	x.c = c;
	x.n = n;
	x.np = names_params(n);
	x.cbs = content_cipher_bs(c);
	x.oh = content_overhead(c);
	x.threads = pick_threads(o->threads);
	x.ptail = &x.probs;
	x.rootfd = -1;
	pthread_mutex_init(&x.plock, NULL);
	pthread_mutex_init(&x.olock, NULL);
	test_hooks(&x);

	x.rootfd = open(o->cipherdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0 || fstat(x.rootfd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", o->cipherdir,
			 strerror(errno));
		goto out;
	}
	x.root = fnode_new(NULL, "", "", st.st_dev, st.st_ino);
	if (!x.root) {
		rc = -ENOMEM;
		goto out;
	}
	rc = queue_start(&x);
	if (rc) {
		snprintf(err, errlen, "cannot start the checker threads");
		goto out;
	}
	if (o->progress && !o->quiet && !fo_progress_start(&x, &prog))
		have_prog = true;
	rc = walk_tree(&x);
	__atomic_store_n(&x.walk_done, true, __ATOMIC_RELAXED);
	queue_finish(&x);
	if (have_prog)
		fo_progress_stop(&x, prog);
	r->corrupt = x.ncorrupt;
	r->skipped = x.nskipped;
	if (fctx_stopped(&x)) {
		rc = -EINTR;
		goto out;
	}
	if (rc) {
		snprintf(err, errlen, "checking '%s' failed: %s", o->cipherdir,
			 strerror(-rc));
		goto out;
	}
	for (struct fproblem *p = x.probs; p; p = p->next)
		any = any || p->kind != FP_SKIPPED;
	if (o->repair && any) {
		rc = qr_open(&x, err, errlen);
		if (!rc)
			rc = repair_all(&x, r);
		qr_close(&x, r);
		if (rc == -EINTR || fctx_stopped(&x))
			rc = -EINTR;
		else if (rc && !err[0])
			snprintf(err, errlen, "repairing '%s' failed: %s",
				 o->cipherdir, strerror(-rc));
	}
out:
	while (x.probs) {
		struct fproblem *p = x.probs;

		x.probs = p->next;
		fproblem_free(p);
	}
	fnode_put(x.root);
	idset_fini(&x.links);
	idset_fini(&x.dirs);
	free(x.ivs);
	if (x.rootfd >= 0)
		close(x.rootfd);
	pthread_mutex_destroy(&x.plock);
	pthread_mutex_destroy(&x.olock);
	return rc;
}

void fsck_result_fini(struct fsck_result *r)
{
	free(r->quarantine);
	free(r->report);
	memset(r, 0, sizeof(*r));
}
