/* SPDX-License-Identifier: MIT */
/*
 * What the parts of src/fsck share: the run context, directory nodes (a
 * refcounted tree of the directories that problems or queued files still
 * refer to), problem records, the (dev, ino) set, output, the file-check
 * queue and the repair steps. Not installed, not used outside src/fsck
 * (and its unit test).
 */
#ifndef FSCK_INTERNAL_H
#define FSCK_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "crypto/content.h"
#include "crypto/names.h"
#include "fsck/fsck.h"

/* Prefix of the temporary files -repair creates inside the cipherdir; a
 * leftover (after kill -9) is recognised and quarantined by the next run. */
#define FSCK_TMP_PREFIX "gocryptfs.veilfs-repair."
/* Entries -repair renames before it gives their directory another IV
 * (never decryptable, so a killed run leaves nothing ambiguous). */
#define FSCK_PARK_PREFIX "gocryptfs.veilfs-parked."
#define FSCK_RMDIR_PREFIX "gocryptfs.diriv.rmdir."
#define FSCK_CONF_BAK "gocryptfs.conf.bak"
#define FSCK_RECOVERED "recovered-"

/* ---- (dev, ino) set: idset.c ------------------------------------------ */

struct idset {
	uint64_t *slot; /* pairs (dev + 1, ino); 0 marks a free pair */
	size_t cap, n;	/* cap pairs, a power of two */
};

/* 1 if added, 0 if it was present, -ENOMEM. */
int idset_add(struct idset *s, dev_t dev, ino_t ino);
bool idset_has(const struct idset *s, dev_t dev, ino_t ino);
void idset_fini(struct idset *s);

/* ---- directory nodes: node.c -------------------------------------------- */

struct fnode {
	struct fnode *parent;	/* holds a reference */
	unsigned long refs;	/* atomic */
	dev_t dev;
	ino_t ino;
	unsigned depth;		/* root: 0 */
	char *cname;		/* stored name in parent; root: "" */
	char *pname;	/* plaintext name; NULL: unknown; root: "" */
};

/* A node for the directory cname (pname may be NULL) in parent (NULL for
 * the root), one reference for the caller; NULL on ENOMEM. */
struct fnode *fnode_new(struct fnode *parent, const char *cname,
			const char *pname, dev_t dev, ino_t ino);
struct fnode *fnode_get(struct fnode *n);
void fnode_put(struct fnode *n);
/* Path of leaf (may be NULL: the directory itself) under dir, ciphertext
 * (relative to CIPHERDIR, "." for the root) or plaintext ("/..." with "?"
 * for unknown names). malloc'ed, NULL on ENOMEM. */
char *fnode_path(const struct fnode *dir, const char *leaf, bool plain);

/* ---- problems ---------------------------------------------------------- */

enum fp_kind {
	FP_DIRIV,	/* the directory's gocryptfs.diriv */
	FP_NAME,	/* a name that does not decrypt */
	FP_NOSIDECAR,	/* long name without .name */
	FP_SIDECAR,	/* .name unreadable or of an impossible size */
	FP_HASH,	/* long name stored under the wrong hash */
	FP_ORPHAN,	/* .name without its entry */
	FP_RMDIR,	/* gocryptfs.diriv.rmdir.* */
	FP_TEMP,	/* leftover of an interrupted -repair */
	FP_PARKED,	/* entry parked by an interrupted -repair */
	FP_SYMLINK,	/* target does not decrypt */
	FP_XNAME,	/* xattr name does not decrypt */
	FP_XVALUE,	/* xattr value does not decrypt */
	FP_CONTENT,	/* header, blocks, size */
	FP_SHORT,	/* 1..17 bytes */
	FP_HDRONLY,	/* note: 18 bytes (reads as empty) */
	FP_UNREADABLE,	/* cannot be opened or listed: corrupt, as
			 * gocryptfs counts it (before FP_SKIPPED: the
			 * kind tables in fsck.c end there) */
	FP_SKIPPED,	/* could not be checked */
};

enum fp_hdr {
	HDR_OK,
	HDR_FIXABLE,	/* damaged; hdr_fix authenticates the blocks */
	HDR_LOST,	/* damaged; no block can be decrypted */
};

struct fproblem {
	struct fproblem *next;
	enum fp_kind kind;
	const char *what;	/* "file", "dir", "entry", "symlink" */
	struct fnode *dir;	/* holds a reference */
	char *cname;		/* entry in dir; NULL: dir itself */
	char *pname;		/* its plaintext name if known */
	char *xname;		/* stored xattr name (FP_X*) */
	dev_t dev;
	ino_t ino;
	uint64_t size;		/* FP_CONTENT, FP_SHORT: size checked */
	uint64_t *bad;		/* FP_CONTENT: bad blocks, ascending */
	size_t nbad;
	uint64_t nblocks;	/* FP_CONTENT: blocks in the file */
	enum fp_hdr hdr;
	uint8_t hdr_fix[CONTENT_HEADER_LEN];
	bool all_bad;		/* nothing of the content is readable */
	bool counted;		/* false: a note */
	bool done;		/* repaired */
};

/* ---- the run ------------------------------------------------------------ */

struct fqueue;
struct quarantine;

struct fctx {
	const struct fsck_opts *o;
	struct content *c;
	struct names *n;
	const struct names_params *np;
	size_t cbs, oh;
	int rootfd;
	struct fnode *root;
	unsigned threads;

	pthread_mutex_t plock;	/* protects probs, ptail, counts */
	struct fproblem *probs, **ptail;
	unsigned long ncorrupt, nskipped;

	struct idset links;	/* walker only: hard-linked files seen
				 * through a visible path */
	struct idset hlinks;	/* walker only: ... through a hidden one
				 * only (freed by walk_tree) */
	struct idset dirs;	/* walker only: directories entered */
	uint8_t (*ivs)[NAMES_DIRIV_LEN]; /* walker only: diriv candidates */
	size_t nivs, capivs;

	/* progress (atomics) */
	unsigned long ndirs, nfiles;
	uint64_t bytes_done, bytes_seen;
	bool walk_done;
	bool stopping;		/* atomic: *o->stop seen */

	pthread_mutex_t olock;	/* protects the output streams */
	bool line_shown;	/* a progress line is on the terminal */

	struct fqueue *q;
	struct quarantine *qr;

	/* VEILFS_FSCK_TEST hooks (tests only; see fsck.c) */
	long kill_step, int_step, pause_files, seg_blocks;
	long steps;
};

bool fctx_stopped(struct fctx *x);

/* Record a problem (takes ownership of p; counts it unless a note) and
 * print its line; fmt describes what is wrong. Thread-safe. */
void fctx_problem(struct fctx *x, struct fproblem *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fctx_vproblem(struct fctx *x, struct fproblem *p, const char *fmt,
		   va_list ap) __attribute__((format(printf, 3, 0)));
/* A new record for the entry cname (NULL: dir itself) in dir. */
struct fproblem *fproblem_new(enum fp_kind kind, struct fnode *dir,
			      const char *cname, const char *pname);
void fproblem_free(struct fproblem *p);
/* Add a diriv candidate (walker). */
void fctx_add_iv(struct fctx *x, const uint8_t iv[static NAMES_DIRIV_LEN]);

/* ---- output: report.c ------------------------------------------------- */

/* "s" quoted, control characters, quotes, backslashes and invalid UTF-8
 * escaped as \xNN (so no name can break or forge an output line). Into buf
 * (NUL-terminated, cut with "..." when too small). */
void fo_quote(char *buf, size_t cap, const char *s);
/* Ascending block numbers as "1, 3-5, 9". */
void fo_blocks(char *buf, size_t cap, const uint64_t *b, size_t n);
/* One output line (a problem, a note, a repair action): clears the progress
 * line first. */
void fo_line(struct fctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fo_vline(struct fctx *x, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* "file \"/a\" (ciphertext \"X\")" for an object (what: "file", "dir",
 * ...), the plaintext path shown when known. malloc'ed or NULL. */
char *fo_object(const char *what, const struct fnode *dir, const char *cname,
		const char *pname);
/* The progress line thread (started only with o->progress). */
int fo_progress_start(struct fctx *x, pthread_t *t);
void fo_progress_stop(struct fctx *x, pthread_t t);
/* Valid UTF-8 without control characters: a name a person could have
 * chosen (used to judge decryptions under a guessed IV). */
bool fo_plausible(const char *s, size_t len);

/* ---- walk.c ---------------------------------------------------------- */

struct fdent {
	char *name;
	char *pname;		/* plaintext name, NULL: unknown */
	unsigned char type;	/* DT_* */
	bool skip;		/* not an object: internal or junk */
};

/* Every entry of the directory open at fd but "." and "..", sorted by
 * name; free with walk_free_ents. */
int walk_list_dir(int fd, struct fdent **out, size_t *n);
void walk_free_ents(struct fdent *e, size_t n);

/* Walk the tree from x->rootfd, checking directories, names, symlinks and
 * xattrs of directories, and handing regular files to the queue. */
int walk_tree(struct fctx *x);
/* Read a diriv file (<= 17 bytes) at dfd: 0 with iv, or a negative errno:
 * -EBADMSG with *len set for a wrong size or an all-zero IV (iv holds the
 * first 16 bytes when there are that many), -EINVAL when it is not a
 * regular file. */
int walk_read_diriv(int dfd, const char *name, uint8_t iv[static 16],
		    size_t *len);
/* Read a long-name sidecar (1..344 bytes) into cname (NUL-terminated,
 * cap > 345): 0, -EBADMSG (impossible size), -EINVAL, -errno. */
int walk_read_sidecar(int dfd, const char *name, char *cname, size_t cap);
/* openat relative to dfd with O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC added;
 * the fd or -errno. */
int walk_openat(int dfd, const char *name, int flags);
/* The directory of node n, reopened from the root one component at a
 * time, each checked by (dev, ino): the fd or -errno (-ESTALE: the tree
 * changed). */
int walk_reopen(struct fctx *x, const struct fnode *n);
/* Check the xattrs of the object open at fd (a file or directory):
 * records FP_XNAME/FP_XVALUE problems. */
void walk_check_xattrs(struct fctx *x, int fd, struct fnode *dir,
		       const char *cname, const char *pname, dev_t dev,
		       ino_t ino, const char *what);
/* Decrypt an xattr value (spec §4.10, with the old base64 form); 0 or
 * -EBADMSG. out holds len bytes. */
int walk_open_xattr_value(struct fctx *x, uint8_t *out, size_t *outlen,
			  const uint8_t *raw, size_t len);

/* ---- check.c: the file-check queue ---------------------------------- */

int queue_start(struct fctx *x);
/* Queue the open regular file fd (ownership passes) of size bytes named
 * cname/pname in dir. Blocks while the queue is full. */
int queue_file(struct fctx *x, int fd, struct fnode *dir, const char *cname,
	       const char *pname, dev_t dev, ino_t ino, uint64_t size);
/* No more files: wait for the checkers and stop them. */
void queue_finish(struct fctx *x);
/* Check ciphertext blocks [b0, b1) of fd with file ID id; bad blocks are
 * appended to *bad (for tests and repair re-checks). */
int check_blocks(struct fctx *x, int fd, uint64_t size, const uint8_t *id,
		 uint64_t b0, uint64_t b1, uint8_t *ct, uint8_t *pt,
		 uint64_t **bad, size_t *nbad, size_t *capbad);
/* Blocks of a file of size bytes (0 for size <= 18). */
uint64_t check_nblocks(const struct fctx *x, uint64_t size);
/* Something in the directory open at dfd (or a few levels below) was
 * written with the master key: a regular file one of whose first blocks
 * with data authenticates under its header, or a symlink whose target
 * authenticates. Looks at a bounded number of objects; false when none of
 * them is ours. */
bool check_dir_ours(struct fctx *x, int dfd);

/* ---- quarantine.c ----------------------------------------------------- */

/* Create the run's quarantine directory and report file. */
int qr_open(struct fctx *x, char *err, size_t errlen);
void qr_close(struct fctx *x, struct fsck_result *r);
/* The run's quarantine directory ("" before qr_open). */
const char *qr_path(struct fctx *x);
/* Append one line to the report (and fsync it). */
void qr_report(struct fctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Copy the regular file open at fd (contents, mode, user xattrs) into the
 * quarantine; *qname gets the copy's name (malloc'ed). */
int qr_copy_file(struct fctx *x, int fd, const char *cname, char **qname);
/* Keep a symlink's raw target, a diriv's or an xattr's raw bytes. */
int qr_save_symlink(struct fctx *x, const char *target, const char *cname,
		    char **qname);
int qr_save_bytes(struct fctx *x, const void *buf, size_t len,
		  const char *what, char **qname);
/* A FIFO, socket or device node: the same node in the quarantine. */
struct stat;
int qr_save_node(struct fctx *x, const struct stat *st, const char *cname,
		 char **qname);
/* Move the directory cname in dfd into the quarantine (same filesystem
 * only): -EXDEV otherwise. */
int qr_move_dir(struct fctx *x, int dfd, const char *cname, char **qname);
/* Diriv candidates from earlier runs' quarantines (16-byte files). */
void qr_collect_ivs(struct fctx *x);
/* Count one state-changing step (tests: VEILFS_FSCK_TEST kill/int hooks);
 * returns -EINTR when the run must stop before the step. */
int qr_step(struct fctx *x);

/* ---- repair.c ---------------------------------------------------------- */

/* Repair every recorded problem; counts into r. */
int repair_all(struct fctx *x, struct fsck_result *r);

#endif
