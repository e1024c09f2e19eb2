/* SPDX-License-Identifier: MIT */
/*
 * The request channel: how the session's worker threads take requests from
 * /dev/fuse and send replies (see chan.c).
 */
#ifndef FS_CHAN_H
#define FS_CHAN_H

#include <stdbool.h>

struct chan;
struct fuse_session;

/* Attach our receive/reply functions to the mounted session se. A thread
 * that finishes a request and finds no other request in progress polls for
 * the next one for up to spin_us microseconds before it sleeps in the
 * kernel (0: never poll). Returns 0 or a negative errno; on failure the
 * session keeps libfuse's own I/O. */
int chan_attach(struct chan **out, struct fuse_session *se,
		unsigned spin_us);

/* Have fn(arg) called once, right after the reply to the kernel's INIT
 * request has been sent (the connection's parameters are then final). */
void chan_after_init(struct chan *c, void (*fn)(void *), void *arg);

/* libfuse 3.14 takes FUSE_CAP_PARALLEL_DIROPS and FUSE_CAP_HANDLE_KILLPRIV
 * into conn->want but never passes them on to the kernel, and knows nothing
 * of FUSE_HANDLE_KILLPRIV_V2: called from the INIT handler with what the
 * filesystem wants of the three, the channel adds them to the INIT reply
 * where the kernel offered them. A no-op when the session uses libfuse's
 * own I/O. (Version 2 of killpriv also makes the kernel stop asking for
 * security.capability before every write once it found none.) */
void chan_init_wants(bool parallel_dirops, bool handle_killpriv,
		     bool handle_killpriv_v2);

/* Requests taken so far, not counting those the kernel sends by itself
 * (forgets, interrupts): a change means the filesystem is in use. */
unsigned long chan_activity(struct chan *c);

/* After fuse_session_destroy (which closes the session's fd). NULL is a
 * no-op. */
void chan_free(struct chan *c);

#endif
