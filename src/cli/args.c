/* SPDX-License-Identifier: MIT */
/*
 * Table-driven flag parser for the gocryptfs command-line conventions (see
 * args.h). Flags that only tune gocryptfs's Go runtime, or that gocryptfs
 * itself keeps only for compatibility, are accepted with a note saying so
 * (never silently), so that existing scripts keep working; anything else
 * unknown is a usage error.
 */
#include "cli/args.h"

#include "common/duration.h"
#include "common/secmem.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ftype {
	F_BOOL,
	F_NOTBOOL,	/* bool that clears the target, e.g. -rw */
	F_STR,
	F_LONG,
	F_PASSFILE,
	F_EXTPASS,
	F_BADNAME,
	F_OPTS,		/* -o */
	F_DURATION,	/* Go duration, into a long long of nanoseconds */
	F_OPENSSL,	/* true|false|auto */
	F_NOTE_BOOL,	/* accepted without effect: note says why */
	F_NOTE_STR,
	F_LIST,		/* repeatable string: struct args_list */
	F_IGN_BOOL,
};

struct flag {
	const char *name;
	enum ftype type;
	size_t off;
};

#define B(n, field) { n, F_BOOL, offsetof(struct args, field) }
#define S(n, field) { n, F_STR, offsetof(struct args, field) }
#define L(n, field) { n, F_LONG, offsetof(struct args, field) }
#define LIST(n, field) { n, F_LIST, offsetof(struct args, field) }

static const struct flag flags[] = {
	B("init", init), B("passwd", passwd), B("info", info),
	B("speed", speed), B("version", version), B("h", help),
	B("help", help), B("dumpmasterkey", dumpmasterkey),
	B("xray", xray),
	B("aessiv", aessiv), B("xchacha", xchacha), B("gcm", gcm),
	B("plaintextnames", plaintextnames),
	B("deterministic-names", deterministic_names),
	B("reverse", reverse), B("hkdf", hkdf), B("raw64", raw64),
	B("zerokey", zerokey),
	L("longnamemax", longnamemax), L("scryptn", scryptn),
	B("fsck", fsck), B("repair", repair),
	B("repair-truncate", repair_truncate), S("quarantine", quarantine),
	B("fg", fg), B("f", fg), B("foreground", fg),
	B("nosyslog", nosyslog), B("ro", ro), B("rw", rw), /* -ro wins */
	B("allow_other", allow_other), B("nonempty", nonempty),
	B("q", quiet), B("quiet", quiet), B("d", debug), B("debug", debug),
	B("noprealloc", noprealloc), B("sharedstorage", sharedstorage),
	LIST("exclude", exclude), LIST("e", exclude),
	LIST("exclude-wildcard", exclude_wildcard),
	LIST("ew", exclude_wildcard), LIST("exclude-from", exclude_from),
	B("one-file-system", one_file_system),
	S("fsname", fsname), S("config", config), S("masterkey", masterkey),
	S("cipher-impl", impl), S("force-impl", impl), S("impl", impl),
	{ "passfile", F_PASSFILE, 0 },
	{ "extpass", F_EXTPASS, 0 },
	{ "badname", F_BADNAME, 0 },
	{ "o", F_OPTS, 0 },
	B("dev", dev), B("nodev", nodev), B("suid", suid),
	B("nosuid", nosuid), B("exec", exec), B("noexec", noexec),
	B("acl", acl), B("kernel_cache", kernel_cache), B("noxattr", noxattr),
	B("serialize_reads", serialize_reads), B("wpanic", wpanic),
	B("fusedebug", fusedebug), B("hh", longhelp),
	B("longnames", longnames),
	S("ko", ko), S("ctlsock", ctlsock), S("force_owner", force_owner),
	S("fido2", fido2), L("notifypid", notifypid),
	{ "idle", F_DURATION, offsetof(struct args, idle_ns) },
	{ "i", F_DURATION, offsetof(struct args, idle_ns) },
	{ "openssl", F_OPENSSL, offsetof(struct args, openssl) },
	/* accepted as gocryptfs accepts them, without effect (see notes) */
	{ "nofail", F_NOTE_BOOL, 0 }, { "devrandom", F_NOTE_BOOL, 0 },
	{ "forcedecode", F_NOTE_BOOL, 0 }, { "trace", F_NOTE_STR, 0 },
	{ "cpuprofile", F_NOTE_STR, 0 }, { "memprofile", F_NOTE_STR, 0 },
};

/* What main says about each F_NOTE_* flag given. */
static const struct {
	const char *name, *text;
} notes[] = {
	{ "nofail", "-nofail: for /etc/fstab (mount(8) and systemd act on "
		    "it); no effect" },
	{ "devrandom", "-devrandom: obsolete, ignored (as in gocryptfs 2.2 "
		       "and later)" },
	{ "forcedecode", "-forcedecode: obsolete, ignored (as in gocryptfs "
			 "2.2 and later)" },
	{ "trace", "-trace: a Go execution trace; veilfs has none and "
		   "writes nothing" },
	{ "cpuprofile", "-cpuprofile: a Go CPU profile; veilfs writes none "
			"(use perf(1))" },
	{ "memprofile", "-memprofile: a Go memory profile; veilfs writes "
			"none (use heaptrack(1))" },
};

/* Options of /etc/fstab that mount(8) consumes before it starts a helper;
 * veilfs refuses them in -o rather than pass them to the kernel. */
static bool is_fstab_only(const char *tok, size_t nlen)
{
	static const char *const names[] = {
		"defaults", "auto", "noauto", "user", "users", "nouser",
		"owner", "group", "_netdev", "comment",
	};

	if (nlen > 2 && strncmp(tok, "x-", 2) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == nlen && !strncmp(tok, names[i], nlen))
			return true;
	return false;
}

static void seterr(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, ARGS_ERR_LEN, fmt, ap);
	va_end(ap);
}

static const struct flag *find_flag(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i].name) == len &&
		    strncmp(flags[i].name, name, len) == 0)
			return &flags[i];
	return NULL;
}

/* Go's strconv.ParseBool. */
static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true",
					   "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false",
					  "False" };

	for (size_t i = 0; i < 6; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int append_fuse_opt(struct args *a, const char *opt, size_t len)
{
	size_t old = a->fuse_opts ? strlen(a->fuse_opts) : 0;
	char *n = realloc(a->fuse_opts, old + len + 2);

	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ',';
	memcpy(n + old, opt, len);
	n[old + len] = '\0';
	a->fuse_opts = n;
	return 0;
}

static int apply(struct args *a, const struct flag *f, const char *name,
		 const char *val, char *err);

static int store_item(struct args *a, struct args_list *l, const char *s,
		      size_t len, char *err)
{
	char **ns, *item;

	if (l->n >= ARGS_MAX_LIST) {
		seterr(err, "too many list values");
		return -EINVAL;
	}
	ns = realloc(a->lstore, (a->nlstore + 1) * sizeof(*ns));
	item = ns ? strndup(s, len) : NULL;
	if (ns)
		a->lstore = ns;
	if (!item) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	a->lstore[a->nlstore++] = item;
	l->v[l->n++] = item;
	return 0;
}

/* The first record of val in CSV (Go's encoding/csv, which gocryptfs's flag
 * library reads list values with): fields separated by ',', a field in
 * double quotes may hold ',' and '"' written as "". An empty value is no
 * field at all. */
static int apply_list(struct args *a, const struct flag *f, const char *name,
		      const char *val, char *err)
{
	struct args_list *l = (struct args_list *)((char *)a + f->off);
	/* the short name ("e", "ew") and the long one count apart */
	size_t alias = strlen(f->name) <= 2;
	char *buf = malloc(strlen(val) + 1);
	const char *p = val;
	int rc = 0;

	if (!buf) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	if (!l->used[alias]) {
		l->n = 0;
		l->used[alias] = true;
	}
	while (*val && !rc) {
		size_t o = 0;

		if (*p == '"') {
			for (p++;; p++) {
				if (*p == '\0') {
					rc = -EINVAL;
					break;
				}
				if (*p == '"' && p[1] == '"') {
					buf[o++] = *p++;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					buf[o++] = *p;
				}
			}
			if (!rc && *p && *p != ',' && *p != '\n')
				rc = -EINVAL;
		} else {
			for (; *p && *p != ',' && *p != '\n'; p++) {
				if (*p == '"')
					rc = -EINVAL;
				buf[o++] = *p;
			}
		}
		if (rc) {
			seterr(err, "invalid argument '%s' for -%s: bad quoting",
			       val, name);
			break;
		}
		rc = store_item(a, l, buf, o, err);
		if (*p != ',')
			break; /* end of the value or of its first line */
		p++;
	}
	free(buf);
	return rc;
}

static bool takes_value(const struct flag *f)
{
	return f->type != F_BOOL && f->type != F_NOTBOOL &&
	       f->type != F_NOTE_BOOL && f->type != F_IGN_BOOL;
}

/* -o a,b=c,...: veilfs flags without dash; everything else goes to FUSE. */
static int apply_opts(struct args *a, const char *list, char *err)
{
	char *copy, *tok, *save = NULL;
	size_t len = strlen(list);
	uintptr_t mk;
	int rc = 0;

	if (a->nostore >= ARGS_MAX_MULTI) {
		seterr(err, "too many -o options");
		return -EINVAL;
	}
	copy = strdup(list);
	if (!copy) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	a->ostore[a->nostore++] = copy;
	for (tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		size_t nlen = eq ? (size_t)(eq - tok) : strlen(tok);
		const struct flag *f = find_flag(tok, nlen);

		if (!f && is_fstab_only(tok, nlen)) {
			seterr(err, "-o %.*s: an /etc/fstab option for mount(8), "
			       "not for veilfs", (int)nlen, tok);
			return -EINVAL;
		}
		if (!f || f->type == F_OPTS) {
			rc = append_fuse_opt(a, tok, strlen(tok));
			if (rc)
				seterr(err, "out of memory");
			continue;
		}
		if (eq)
			*eq = '\0';
		if (!eq && takes_value(f)) {
			seterr(err, "-o %s needs a value (%s=...)", tok, tok);
			return -EINVAL;
		}
		rc = apply(a, f, tok, eq ? eq + 1 : NULL, err);
	}
	/* -o masterkey=HEX: the copy is wiped after use (cli), the argv
	 * string it came from here, so that ps shows it no longer */
	mk = (uintptr_t)a->masterkey;
	if (a->masterkey && mk >= (uintptr_t)copy &&
	    mk < (uintptr_t)copy + len)
		secure_zero((char *)(uintptr_t)list + (mk - (uintptr_t)copy),
			    strlen(a->masterkey));
	return rc;
}

static int add_note(struct args *a, const struct flag *f, char *err)
{
	const char *text = NULL;

	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		if (!strcmp(notes[i].name, f->name))
			text = notes[i].text;
	for (size_t i = 0; i < a->nnotes; i++)
		if (a->notes[i] == text)
			return 0;
	if (!text || a->nnotes >= ARGS_MAX_MULTI) {
		seterr(err, "-%s: cannot note this flag", f->name);
		return -EINVAL;
	}
	a->notes[a->nnotes++] = text;
	return 0;
}

static int apply(struct args *a, const struct flag *f, const char *name,
		 const char *val, char *err)
{
	char *base = (char *)a;
	bool b = true;
	char *end;
	long v;

	char derr[DURATION_ERR_LEN];
	int64_t ns;

	switch (f->type) {
	case F_BOOL:
	case F_NOTBOOL:
	case F_NOTE_BOOL:
	case F_IGN_BOOL:
		if (val && parse_bool(val, &b)) {
			seterr(err, "invalid boolean value '%s' for -%s", val,
			       name);
			return -EINVAL;
		}
		if (f->type == F_BOOL)
			*(bool *)(base + f->off) = b;
		else if (f->type == F_NOTBOOL)
			*(bool *)(base + f->off) = !b;
		else if (f->type == F_NOTE_BOOL && b)
			return add_note(a, f, err);
		return 0;
	case F_NOTE_STR:
		return add_note(a, f, err);
	case F_DURATION:
		if (duration_parse(val, &ns, derr)) {
			seterr(err, "-%s: %s (write it like 90s or 2h45m)",
			       name, derr);
			return -EINVAL;
		}
		*(long long *)(base + f->off) = ns > 0 ? ns : 0;
		return 0;
	case F_OPENSSL:
		if (strcmp(val, "auto") == 0) {
			*(int *)(base + f->off) = -1;
			return 0;
		}
		if (parse_bool(val, &b)) {
			seterr(err, "invalid value '%s' for -%s: want true, "
			       "false or auto", val, name);
			return -EINVAL;
		}
		*(int *)(base + f->off) = b;
		return 0;
	case F_STR:
		/* an empty value is no value, as in gocryptfs (a wrapper's
		 * -config="$CONF" with CONF unset) */
		*(const char **)(base + f->off) = *val ? val : NULL;
		return 0;
	case F_LONG:
		errno = 0;
		v = strtol(val, &end, 0);
		if (errno || end == val || *end) {
			seterr(err, "invalid value '%s' for -%s", val, name);
			return -EINVAL;
		}
		*(long *)(base + f->off) = v;
		return 0;
	case F_PASSFILE:
		if (!*val)
			return 0; /* dropped, as gocryptfs does */
		if (a->npassfiles >= ARGS_MAX_MULTI) {
			seterr(err, "too many -passfile flags");
			return -EINVAL;
		}
		a->passfiles[a->npassfiles++] = val;
		return 0;
	case F_EXTPASS:
		if (!*val)
			return 0;
		if (a->nextpass >= ARGS_MAX_MULTI) {
			seterr(err, "too many -extpass flags");
			return -EINVAL;
		}
		a->extpass[a->nextpass++] = val;
		return 0;
	case F_BADNAME:
		if (a->nbadname >= ARGS_MAX_MULTI) {
			seterr(err, "too many -badname flags");
			return -EINVAL;
		}
		a->badname[a->nbadname++] = val;
		return 0;
	case F_OPTS:
		return apply_opts(a, val, err);
	case F_LIST:
		return apply_list(a, f, name, val, err);
	}
	return -EINVAL;
}

/* argv[*i] (and its value, *i moved past it): in the first pass only
 * -o, in the second everything else. */
static int parse_one(struct args *a, int argc, char **argv, int *i,
		     bool *only_pos, bool opts_pass, char *err)
{
	const char *arg = argv[*i], *name, *eq, *val = NULL;
	const struct flag *f;
	size_t nlen;

	if (*only_pos || arg[0] != '-' || arg[1] == '\0') {
		if (opts_pass)
			return 0;
		if (a->npos >= 2) {
			seterr(err, "too many arguments: '%s'", arg);
			return -EINVAL;
		}
		a->pos[a->npos++] = arg;
		return 0;
	}
	if (strcmp(arg, "--") == 0) {
		*only_pos = true;
		return 0;
	}
	name = arg + 1;
	if (*name == '-')
		name++;
	eq = strchr(name, '=');
	nlen = eq ? (size_t)(eq - name) : strlen(name);
	f = find_flag(name, nlen);
	if (!f) {
		seterr(err, "unknown flag: -%.*s", (int)nlen, name);
		return -EINVAL;
	}
	if (eq) {
		val = eq + 1;
	} else if (takes_value(f)) {
		if (*i + 1 >= argc) {
			seterr(err, "flag needs an argument: -%s", name);
			return -EINVAL;
		}
		val = argv[++*i];
	}
	if (opts_pass != (f->type == F_OPTS))
		return 0;
	return apply(a, f, f->name, val, err);
}

int args_parse(struct args *a, int argc, char **argv,
	       char err[static ARGS_ERR_LEN])
{
	bool only_pos = false;
	int rc;

	memset(a, 0, sizeof(*a));
	a->hkdf = true;
	a->raw64 = true;
	a->scryptn = ARGS_UNSET;
	a->exec = true;
	a->longnames = true;
	a->openssl = -1;
	err[0] = '\0';
	/* Two passes: -o items first, then the rest, so that a flag given
	 * on the command line wins over the same one in -o (an fstab entry
	 * overridden by hand), as in gocryptfs. */
	for (int pass = 0; pass < 2; pass++) {
		only_pos = false;
		for (int i = 1; i < argc; i++) {
			rc = parse_one(a, argc, argv, &i, &only_pos, pass == 0,
				       err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

const char *args_flag(size_t i, bool *value)
{
	if (i >= sizeof(flags) / sizeof(flags[0]))
		return NULL;
	*value = takes_value(&flags[i]);
	return flags[i].name;
}

void args_free(struct args *a)
{
	for (size_t i = 0; i < a->nlstore; i++)
		free(a->lstore[i]);
	free(a->lstore);
	free(a->fuse_opts);
	for (size_t i = 0; i < a->nostore; i++)
		free(a->ostore[i]);
	memset(a, 0, sizeof(*a));
}
