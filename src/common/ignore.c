// SPDX-License-Identifier: MIT
/*
 * Exclusion patterns (ignore.h). A line is rewritten step by step the way
 * gocryptfs 2.3 turns it into a regular expression, into a token list, and
 * the token list into a small program for a Thompson NFA: matching walks the
 * path once with a set of states, so no pattern can make it backtrack.
 */
#include "common/ignore.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tokens of a rewritten line. */
enum tok {
	T_RAW,	    /* a byte not yet interpreted */
	T_LIT,	    /* a literal byte */
	T_STAR,	    /* [^/]* */
	T_CLASS,    /* one byte of a class */
	T_DIRS,	    /* (|.*\/): nothing, or anything ending in '/' */
	T_SLASHDIR, /* (/|/.*\/): '/', or '/' anything '/' */
	T_SUBTREE,  /* (|/.*): nothing, or '/' and anything */
	T_ANY,	    /* .* */
};

struct token {
	uint8_t t, c;
	uint16_t cls; /* T_CLASS: index into the class table */
};

/* Instructions of the matcher program. */
enum op {
	OP_BYTE,     /* consume c */
	OP_CLASS,    /* consume a byte of class cls */
	OP_NOTSLASH, /* consume a byte other than '/' */
	OP_ANYBYTE,  /* consume any byte */
	OP_SPLIT,    /* continue at x and at y */
	OP_JMP,	     /* continue at x */
	OP_MATCH,
};

struct insn {
	uint8_t op, c;
	uint16_t cls;
	uint32_t x, y;
};

struct pattern {
	bool negate, never;
	struct insn *prog;
	size_t n;
	uint8_t (*classes)[32];
};

struct ignore {
	struct pattern *p;
	size_t n, cap;
	size_t max_prog; /* longest program, for the state sets */
};

int ignore_new(struct ignore **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ignore_free(struct ignore *ig)
{
	if (!ig)
		return;
	for (size_t i = 0; i < ig->n; i++) {
		free(ig->p[i].prog);
		free(ig->p[i].classes);
	}
	free(ig->p);
	free(ig);
}

size_t ignore_count(const struct ignore *ig)
{
	return ig->n;
}

/* ---- rewriting a line into tokens --------------------------------------- */

struct toks {
	struct token *v;
	size_t n;
	uint8_t (*classes)[32];
	size_t ncls;
	bool never;
};

static bool raw_at(const struct toks *t, size_t i, const char *s)
{
	for (size_t k = 0; s[k]; k++)
		if (i + k >= t->n || t->v[i + k].t != T_RAW ||
		    t->v[i + k].c != (uint8_t)s[k])
			return false;
	return true;
}

/* Replace every occurrence of the raw bytes s, left to right and without
 * overlap, by one token of type t. */
static void replace(struct toks *t, const char *s, enum tok with)
{
	size_t len = strlen(s), r, w = 0;

	for (r = 0; r < t->n;) {
		if (raw_at(t, r, s)) {
			t->v[w].t = (uint8_t)with;
			t->v[w].c = 0;
			w++;
			r += len;
		} else {
			t->v[w++] = t->v[r++];
		}
	}
	t->n = w;
}

/* "[...]" starting at raw token i: a class; returns the index after ']' or
 * 0 if there is no closing ']' (then the line matches nothing, as the
 * regular expression gocryptfs builds would not compile). */
static size_t parse_class(struct toks *t, size_t i, uint8_t set[32])
{
	size_t j = i + 1;
	bool neg = false, first = true;

	memset(set, 0, 32);
	if (j < t->n && t->v[j].t == T_RAW && t->v[j].c == '^') {
		neg = true;
		j++;
	}
	for (; j < t->n; j++, first = false) {
		unsigned lo, hi;

		if (t->v[j].t != T_RAW)
			return 0;
		lo = t->v[j].c;
		if (lo == ']' && !first)
			break;
		if (lo == '\\' && j + 1 < t->n && t->v[j + 1].t == T_RAW)
			lo = t->v[++j].c;
		hi = lo;
		if (j + 2 < t->n && t->v[j + 1].t == T_RAW &&
		    t->v[j + 1].c == '-' && t->v[j + 2].t == T_RAW &&
		    t->v[j + 2].c != ']') {
			hi = t->v[j + 2].c;
			j += 2;
		}
		for (unsigned c = lo; c <= hi; c++)
			set[c / 8] |= (uint8_t)(1u << (c % 8));
	}
	if (j >= t->n)
		return 0;
	if (neg)
		for (int k = 0; k < 32; k++)
			set[k] = (uint8_t)~set[k];
	return j + 1;
}

/* The remaining raw bytes: escapes, classes and literals. */
static int interpret(struct toks *t)
{
	size_t r, w = 0;

	for (r = 0; r < t->n;) {
		struct token *k = &t->v[r];

		if (k->t != T_RAW) {
			t->v[w++] = t->v[r++];
		} else if (k->c == '\\') {
			if (r + 1 >= t->n || t->v[r + 1].t != T_RAW) {
				t->never = true; /* a dangling escape */
				return 0;
			}
			t->v[w].t = T_LIT;
			t->v[w++].c = t->v[r + 1].c;
			r += 2;
		} else if (k->c == '[') {
			uint8_t (*nc)[32];
			size_t end;

			nc = realloc(t->classes, (t->ncls + 1) * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			t->classes = nc;
			end = parse_class(t, r, t->classes[t->ncls]);
			if (!end) {
				t->never = true;
				return 0;
			}
			t->v[w].t = T_CLASS;
			t->v[w].c = 0;
			t->v[w++].cls = (uint16_t)t->ncls++;
			r = end;
		} else {
			t->v[w].t = T_LIT;
			t->v[w++].c = k->c;
			r++;
		}
	}
	t->n = w;
	return 0;
}

/* gocryptfs anchors "dir/...*.ext" (a name, a slash, later "*."). */
static bool anchor_rule(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] == '/' || s[i] == '+' || s[i + 1] != '/')
			continue;
		for (size_t j = i + 2; j + 1 < len; j++)
			if (s[j] == '*' && s[j + 1] == '.')
				return true;
	}
	return false;
}

/* Line (trimmed, without "!") -> tokens, with the anchoring prefix and the
 * subtree suffix. */
static int tokenize(struct toks *t, const char *s, size_t len)
{
	bool anchored, below;
	size_t i, o = 0;

	t->v = calloc(len + 4, sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	if (len && s[0] != '/' && anchor_rule(s, len))
		t->v[o++] = (struct token){ .t = T_RAW, .c = '/' };
	for (i = 0; i < len; i++)
		t->v[o++] = (struct token){ .t = T_RAW, .c = (uint8_t)s[i] };
	t->n = o;
	if (raw_at(t, 0, "/**/")) {
		memmove(t->v, t->v + 1, (t->n - 1) * sizeof(*t->v));
		t->n--;
	}
	replace(t, "/**/", T_SLASHDIR);
	replace(t, "**/", T_DIRS);
	replace(t, "/**", T_SUBTREE);
	for (i = 0; i + 1 < t->n; i++) {
		if (raw_at(t, i, "\\*")) {
			t->v[i].t = T_LIT;
			t->v[i].c = '*';
			memmove(t->v + i + 1, t->v + i + 2,
				(t->n - i - 2) * sizeof(*t->v));
			t->n--;
		}
	}
	for (i = 0; i < t->n; i++) {
		if (t->v[i].t == T_RAW && t->v[i].c == '*')
			t->v[i].t = T_STAR;
		else if (t->v[i].t == T_RAW && t->v[i].c == '?')
			t->v[i].t = T_LIT;
	}
	/* A trailing slash or a leading one, as the rewritten text shows it. */
	below = t->n && t->v[t->n - 1].t == T_RAW && t->v[t->n - 1].c == '/';
	anchored = t->n && t->v[0].t == T_RAW && t->v[0].c == '/';
	if (interpret(t) || t->never)
		return t->never ? 0 : -ENOMEM;
	if (anchored) {
		/* "^(|/)" + the rest: our paths have no leading slash */
		memmove(t->v, t->v + 1, (t->n - 1) * sizeof(*t->v));
		t->n--;
	} else {
		memmove(t->v + 1, t->v, t->n * sizeof(*t->v));
		t->v[0] = (struct token){ .t = T_DIRS };
		t->n++;
	}
	t->v[t->n++] = (struct token){ .t = below ? T_ANY : T_SUBTREE };
	return 0;
}

/* ---- tokens -> program --------------------------------------------------- */

struct emit {
	struct insn *v;
	size_t n;
};

static uint32_t put(struct emit *e, uint8_t op, uint8_t c, uint32_t x,
		    uint32_t y)
{
	e->v[e->n] = (struct insn){ .op = op, .c = c, .x = x, .y = y };
	return (uint32_t)e->n++;
}

/* A loop "op*" (op consuming one byte): L: SPLIT L+1, L+3; op; JMP L. */
static void star(struct emit *e, uint8_t op)
{
	uint32_t l = (uint32_t)e->n;

	put(e, OP_SPLIT, 0, l + 1, l + 3);
	put(e, op, 0, 0, 0);
	put(e, OP_JMP, 0, l, 0);
}

static void compile(struct emit *e, const struct toks *t)
{
	uint32_t l;

	for (size_t i = 0; i < t->n; i++) {
		const struct token *k = &t->v[i];

		switch ((enum tok)k->t) {
		case T_RAW:
		case T_LIT:
			put(e, OP_BYTE, k->c, 0, 0);
			break;
		case T_CLASS:
			l = put(e, OP_CLASS, 0, 0, 0);
			e->v[l].cls = k->cls;
			break;
		case T_STAR:
			star(e, OP_NOTSLASH);
			break;
		case T_ANY:
			star(e, OP_ANYBYTE);
			break;
		case T_SLASHDIR:
			/* '/', then what T_DIRS is */
			put(e, OP_BYTE, '/', 0, 0);
			__attribute__((fallthrough));
		case T_DIRS:
			/* SPLIT end, L; L: .* ; '/' ; end */
			l = put(e, OP_SPLIT, 0, 0, (uint32_t)e->n + 1);
			star(e, OP_ANYBYTE);
			put(e, OP_BYTE, '/', 0, 0);
			e->v[l].x = (uint32_t)e->n;
			break;
		case T_SUBTREE:
			/* SPLIT end, L; L: '/' ; .* ; end */
			l = put(e, OP_SPLIT, 0, 0, (uint32_t)e->n + 1);
			put(e, OP_BYTE, '/', 0, 0);
			star(e, OP_ANYBYTE);
			e->v[l].x = (uint32_t)e->n;
			break;
		}
	}
	put(e, OP_MATCH, 0, 0, 0);
}

/* Instructions a token may need at most (T_SLASHDIR: 6). */
#define INSN_PER_TOKEN 6

int ignore_add(struct ignore *ig, const char *line, size_t len)
{
	struct toks t = { 0 };
	struct emit e = { 0 };
	struct pattern p = { 0 };
	int rc;

	if (len > IGNORE_LINE_MAX || memchr(line, '\0', len))
		return -EINVAL;
	while (len && line[len - 1] == '\r')
		len--;
	if (len && line[0] == '#')
		return 0;
	while (len && line[0] == ' ') {
		line++;
		len--;
	}
	while (len && line[len - 1] == ' ')
		len--;
	if (!len)
		return 0;
	if (line[0] == '!') {
		p.negate = true;
		line++;
		len--;
		if (!len)
			return 0; /* "!" alone changes nothing */
	}
	if (line[0] == '#' || line[0] == '!') {
		line++;
		len--;
	}
	rc = tokenize(&t, line, len);
	if (rc)
		goto out;
	p.never = t.never;
	if (!p.never) {
		e.v = calloc(t.n * INSN_PER_TOKEN + 1, sizeof(*e.v));
		if (!e.v) {
			rc = -ENOMEM;
			goto out;
		}
		compile(&e, &t);
	}
	if (ig->n == ig->cap) {
		size_t cap = ig->cap ? ig->cap * 2 : 8;
		struct pattern *np = realloc(ig->p, cap * sizeof(*np));

		if (!np) {
			rc = -ENOMEM;
			goto out;
		}
		ig->p = np;
		ig->cap = cap;
	}
	p.prog = e.v;
	p.n = e.n;
	p.classes = t.classes;
	ig->p[ig->n++] = p;
	if (p.n > ig->max_prog)
		ig->max_prog = p.n;
	e.v = NULL;
	t.classes = NULL;
out:
	free(t.v);
	free(t.classes);
	free(e.v);
	return rc;
}

int ignore_add_text(struct ignore *ig, const char *text, size_t len)
{
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t l = nl ? (size_t)(nl - text) : len;
		int rc = ignore_add(ig, text, l);

		if (rc)
			return rc;
		if (!nl)
			break;
		text += l + 1;
		len -= l + 1;
	}
	return 0;
}

/* ---- matching ---------------------------------------------------------- */

/* A set of program counters: a dense list and a membership bitmap. */
struct pcset {
	uint32_t *list;
	uint64_t *bits;
	size_t n;
};

/* Add pc and everything reachable from it without consuming a byte. */
static void add(const struct pattern *p, struct pcset *s, uint32_t pc,
		uint32_t *stack)
{
	size_t sp = 0;

	stack[sp++] = pc;
	while (sp) {
		pc = stack[--sp];
		if (s->bits[pc / 64] & (1ull << (pc % 64)))
			continue;
		s->bits[pc / 64] |= 1ull << (pc % 64);
		s->list[s->n++] = pc;
		if (p->prog[pc].op == OP_JMP) {
			stack[sp++] = p->prog[pc].x;
		} else if (p->prog[pc].op == OP_SPLIT) {
			stack[sp++] = p->prog[pc].y;
			stack[sp++] = p->prog[pc].x;
		}
	}
}

static bool takes(const struct pattern *p, const struct insn *in, uint8_t c)
{
	switch ((enum op)in->op) {
	case OP_BYTE:
		return in->c == c;
	case OP_CLASS:
		return p->classes[in->cls][c / 8] & (1u << (c % 8));
	case OP_NOTSLASH:
		return c != '/';
	case OP_ANYBYTE:
		return true;
	case OP_SPLIT:
	case OP_JMP:
	case OP_MATCH:
		break;
	}
	return false;
}

/* work: 2 sets of lists and bitmaps plus a stack, for n instructions. */
static bool run(const struct pattern *p, const char *path, size_t len,
		uint32_t *work)
{
	size_t words = (p->n + 63) / 64;
	struct pcset a, b, *cur = &a, *next = &b, *tmp;
	uint32_t *stack;

	/* Every pc enters a set once and pushes at most two: the stack needs
	 * 2n + 1 slots; it has 2n + 2. */
	a.list = work;
	b.list = work + p->n;
	stack = work + 2 * p->n;
	a.bits = (uint64_t *)(void *)(work + 4 * p->n + 2);
	b.bits = a.bits + words;
	memset(a.bits, 0, 2 * words * sizeof(uint64_t));
	a.n = b.n = 0;
	add(p, cur, 0, stack);
	for (size_t i = 0; i < len && cur->n; i++) {
		uint8_t c = (uint8_t)path[i];

		memset(next->bits, 0, words * sizeof(uint64_t));
		next->n = 0;
		for (size_t k = 0; k < cur->n; k++) {
			const struct insn *in = &p->prog[cur->list[k]];

			if (takes(p, in, c))
				add(p, next, cur->list[k] + 1, stack);
		}
		tmp = cur;
		cur = next;
		next = tmp;
	}
	for (size_t k = 0; k < cur->n; k++)
		if (p->prog[cur->list[k]].op == OP_MATCH)
			return true;
	return false;
}

/* Work area of run for n instructions, in uint32_t units: two lists of n,
 * a stack of 2n + 2, then two bitmaps (64-bit aligned: 4n + 2 is even). */
static size_t work_len(size_t n)
{
	return 4 * n + 2 + 4 * ((n + 63) / 64);
}

bool ignore_match(const struct ignore *ig, const char *path, size_t len)
{
	uint64_t small[256];
	uint32_t *work = (uint32_t *)(void *)small;
	bool excluded = false;

	if (!ig || !ig->n)
		return false;
	if (work_len(ig->max_prog) > sizeof(small) / sizeof(small[0]) * 2) {
		work = malloc(work_len(ig->max_prog) * sizeof(uint32_t));
		/* Out of memory: exclude, never show what may be hidden. */
		if (!work)
			return true;
	}
	for (size_t i = 0; i < ig->n; i++) {
		const struct pattern *p = &ig->p[i];

		if (p->never || p->negate == !excluded)
			continue;
		if (run(p, path, len, work))
			excluded = !p->negate;
	}
	if (work != (uint32_t *)(void *)small)
		free(work);
	return excluded;
}
