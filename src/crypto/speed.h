/* SPDX-License-Identifier: MIT */
/*
 * The -speed benchmark and the -init cipher choice, through aead.h only.
 */
#ifndef CRYPTO_SPEED_H
#define CRYPTO_SPEED_H

#include <stdio.h>

#include "crypto/aead.h"

/* Print the CPU model and crypto flags, then one row per implementation
 * (MB/s sealing 4096-byte blocks with a 24-byte AAD on one thread, thread
 * CPU time), marking per cipher the fastest (what auto mode picks), one row
 * per cipher for the parallel batch path (wall time), and which cipher
 * -init would choose. Takes under 3 seconds. Returns 0 or a negative errno
 * if an implementation failed. */
int speed_run(FILE *out);

/* The cipher -init should use on this machine: the faster of AES-GCM-256
 * and XChaCha20-Poly1305 (best implementation of each), measured within
 * budget_ms (0 means 200 ms, at most 500). The measured MB/s go to *gcm and
 * *xchacha when non-NULL. AES-SIV-512 is never chosen for speed. */
enum aead_cipher speed_pick_cipher(unsigned budget_ms, double *gcm,
				   double *xchacha);

#endif
