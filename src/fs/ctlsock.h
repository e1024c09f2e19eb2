/* SPDX-License-Identifier: MIT */
/*
 * -ctlsock: a Unix socket that translates paths between the plaintext view
 * and the cipherdir, speaking gocryptfs's JSON protocol. A request is one
 * read(2) of at most CTLSOCK_MAX_REQ bytes holding {"EncryptPath": P} or
 * {"DecryptPath": P}; the answer is one line
 * {"Result":R,"ErrNo":N,"ErrText":T,"WarnText":W}; a connection may carry
 * any number of requests. The frontend (forward or reverse view) supplies
 * the translation; this module owns the protocol, the socket and its thread.
 */
#ifndef FS_CTLSOCK_H
#define FS_CTLSOCK_H

#include <stddef.h>

/* gocryptfs reads requests into a 5000-byte buffer: a read that fills it
 * is refused by closing the connection. */
#define CTLSOCK_MAX_REQ 4999

struct ctlsock;

/* Path translation of one frontend. path is canonical (see
 * dir_encrypt_path); on success *out is malloc'ed (the module frees it).
 * Return 0 or a negative errno; -ENOENT is answered with ErrNo 2 and every
 * other error with -1 (as gocryptfs does), ErrText its message. */
struct ctlsock_ops {
	int (*encrypt_path)(void *arg, const char *path, char **out);
	int (*decrypt_path)(void *arg, const char *path, char **out);
};

/* The answer to one request of len bytes (any bytes): a malloc'ed,
 * NUL-terminated JSON line ending in '\n', or NULL on ENOMEM. Pure apart
 * from the ops calls. */
char *ctlsock_answer(const struct ctlsock_ops *ops, void *arg,
		     const char *req, size_t len);

/* Create the socket at path (mode 0600; a stale socket nobody listens on is
 * replaced, anything else there is refused with -EADDRINUSE) and serve it
 * from a thread of its own. ops and arg are borrowed until ctlsock_stop.
 * Must run in the process that serves (threads do not survive fork).
 * Returns 0 or a negative errno. */
int ctlsock_start(struct ctlsock **out, const char *path,
		  const struct ctlsock_ops *ops, void *arg);
/* Stop the thread, close every connection and remove the socket (if it is
 * still the one we created). NULL is a no-op. */
void ctlsock_stop(struct ctlsock *cs);

#endif
