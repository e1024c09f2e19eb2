// SPDX-License-Identifier: MIT
/*
 * What fsck prints: problem and repair lines on o->out (names quoted and
 * escaped, so a hostile name cannot break or forge a line), and on a
 * terminal one progress line on o->err, redrawn in place and cleared before
 * any other line is printed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "fsck/internal.h"

#define PROGRESS_MS 250

bool fo_plausible(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;
	uint32_t cp;

	while (i < len) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
		k = utf8_len(p + i, len - i, &cp);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

void fo_quote(char *buf, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k;
	uint32_t cp;

	if (cap < 8) {
		if (cap)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	while (i < n) {
		char tmp[8];
		size_t tl;

		k = utf8_len(p + i, n - i, &cp);
		if (k == 1 && (p[i] < 0x20 || p[i] == 0x7f || p[i] == '"' ||
			       p[i] == '\\'))
			k = 0;
		if (k) {
			memcpy(tmp, p + i, k);
			tl = k;
		} else {
			snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
			tl = 4;
			k = 1;
		}
		if (o + tl + 5 > cap) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, tl);
		o += tl;
		i += k;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

void fo_blocks(char *buf, size_t cap, const uint64_t *b, size_t n)
{
	size_t o = 0, i = 0;

	if (!cap)
		return;
	buf[0] = '\0';
	while (i < n) {
		size_t j = i;
		int w;

		while (j + 1 < n && b[j + 1] == b[j] + 1)
			j++;
		if (j == i)
			w = snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "",
				     (unsigned long long)b[i]);
		else
			w = snprintf(buf + o, cap - o, "%s%llu-%llu",
				     i ? ", " : "", (unsigned long long)b[i],
				     (unsigned long long)b[j]);
		if (w < 0 || (size_t)w >= cap - o) {
			/* cut: end with ", ..." if it fits */
			if (cap >= 6) {
				o = o + 5 < cap ? o : cap - 6;
				memcpy(buf + o, ", ...", 6);
			}
			return;
		}
		o += (size_t)w;
		i = j + 1;
	}
}

static void clear_line(struct fctx *x)
{
	if (x->line_shown) {
		fputs("\r\033[K", x->o->err);
		fflush(x->o->err);
		x->line_shown = false;
	}
}

void fo_vline(struct fctx *x, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&x->olock);
	clear_line(x);
	vfprintf(x->o->out, fmt, ap);
	fputc('\n', x->o->out);
	fflush(x->o->out);
	pthread_mutex_unlock(&x->olock);
}

void fo_line(struct fctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fo_vline(x, fmt, ap);
	va_end(ap);
}

char *fo_object(const char *what, const struct fnode *dir, const char *cname,
		const char *pname)
{
	bool unnamed = cname && !pname;
	char *cp = fnode_path(dir, cname, false), *s = NULL;
	/* an entry whose name is unknown: show the directory it is in */
	char *pp = fnode_path(dir, cname && pname ? pname : NULL, true);
	char *qc = NULL, *qp = NULL;

	if (!cp || !pp)
		goto out;
	/* whole paths, however deep: quoting at most quadruples a byte */
	qc = malloc(4 * strlen(cp) + 8);
	qp = malloc(4 * strlen(pp) + 8);
	if (!qc || !qp)
		goto out;
	fo_quote(qc, 4 * strlen(cp) + 8, cp);
	fo_quote(qp, 4 * strlen(pp) + 8, pp);
	if (asprintf(&s, unnamed ? "%s in dir %s (ciphertext %s)"
				 : "%s %s (ciphertext %s)",
		     what, qp, qc) < 0)
		s = NULL;
out:
	free(cp);
	free(pp);
	free(qc);
	free(qp);
	return s;
}

/* ---- progress ---------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(char *buf, size_t cap, double b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned i = 0;

	while (b >= 1024 && i < 4) {
		b /= 1024;
		i++;
	}
	snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

struct progress {
	struct fctx *x;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool quit;
};

static struct progress g_prog;

static void draw(struct fctx *x, double t0)
{
	unsigned long d = __atomic_load_n(&x->ndirs, __ATOMIC_RELAXED);
	unsigned long f = __atomic_load_n(&x->nfiles, __ATOMIC_RELAXED);
	uint64_t done = __atomic_load_n(&x->bytes_done, __ATOMIC_RELAXED);
	uint64_t seen = __atomic_load_n(&x->bytes_seen, __ATOMIC_RELAXED);
	bool walked = __atomic_load_n(&x->walk_done, __ATOMIC_RELAXED);
	double el = now_s() - t0, rate = el > 0 ? (double)done / el : 0;
	char hd[32], hs[32], hr[32], left[48] = "";

	human(hd, sizeof(hd), (double)done);
	human(hs, sizeof(hs), (double)seen);
	human(hr, sizeof(hr), rate);
	if (walked && rate > 0 && seen >= done)
		snprintf(left, sizeof(left), ", %.0f s left",
			 (double)(seen - done) / rate);
	pthread_mutex_lock(&x->olock);
	fprintf(x->o->err, "\rfsck: %lu dirs, %lu files, %s of %s%s, %s/s%s"
		"\033[K", d, f, hd, hs, walked ? "" : " so far", hr, left);
	fflush(x->o->err);
	x->line_shown = true;
	pthread_mutex_unlock(&x->olock);
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	double t0 = now_s();
	struct timespec ts;

	pthread_mutex_lock(&p->lock);
	while (!p->quit) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += PROGRESS_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		if (p->quit)
			break;
		pthread_mutex_unlock(&p->lock);
		draw(p->x, t0);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int fo_progress_start(struct fctx *x, pthread_t *t)
{
	g_prog.x = x;
	g_prog.quit = false;
	pthread_mutex_init(&g_prog.lock, NULL);
	pthread_cond_init(&g_prog.cond, NULL);
	if (pthread_create(t, NULL, progress_main, &g_prog)) {
		pthread_mutex_destroy(&g_prog.lock);
		pthread_cond_destroy(&g_prog.cond);
		return -EAGAIN;
	}
	return 0;
}

void fo_progress_stop(struct fctx *x, pthread_t t)
{
	pthread_mutex_lock(&g_prog.lock);
	g_prog.quit = true;
	pthread_cond_signal(&g_prog.cond);
	pthread_mutex_unlock(&g_prog.lock);
	pthread_join(t, NULL);
	pthread_mutex_destroy(&g_prog.lock);
	pthread_cond_destroy(&g_prog.cond);
	pthread_mutex_lock(&x->olock);
	clear_line(x);
	pthread_mutex_unlock(&x->olock);
}
