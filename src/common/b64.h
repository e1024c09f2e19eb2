/* SPDX-License-Identifier: MIT */
/*
 * Base64 codecs of RFC 4648 in the three forms gocryptfs uses (spec §0):
 * standard padded (config file), URL padded and URL unpadded ("Raw64",
 * file names, symlink targets, xattr names).
 *
 * Decoding is strict: only the variant's alphabet, exact padding (none for
 * raw), and canonical trailing bits, so one stored name can decode to only
 * one byte string. CR and LF are rejected.
 */
#ifndef COMMON_B64_H
#define COMMON_B64_H

#include <stddef.h>
#include <stdint.h>

enum b64_variant {
	B64_STD,     /* A-Z a-z 0-9 + /, '=' padding */
	B64_URL,     /* A-Z a-z 0-9 - _, '=' padding */
	B64_URL_RAW, /* A-Z a-z 0-9 - _, no padding */
};

/* Characters needed to encode n bytes (without the terminating NUL). */
size_t b64_encoded_len(size_t n, enum b64_variant v);

/* Largest number of bytes that len characters can decode to. */
size_t b64_decoded_max(size_t len);

/* Encode n bytes from in into out, which must hold b64_encoded_len(n)+1
 * bytes; out is NUL-terminated. Returns the encoded length. */
size_t b64_encode(char *out, const uint8_t *in, size_t n, enum b64_variant v);

/* The last data character of the len characters s (variant v) may carry
 * unused low bits: *nbits gets their count (2 or 4), and they are set to
 * bits. Returns that character's position, or -1 (and *nbits 0) if there
 * are no such bits or the character is not in the alphabet. gocryptfs 2.3
 * decoded names without checking these bits (-badname shows its view). */
int b64_set_unused_bits(char *s, size_t len, enum b64_variant v,
			unsigned bits, unsigned *nbits);

/* Decode len characters of in into out (capacity cap). On success stores the
 * byte count in *outlen and returns 0. Returns -EINVAL for anything that is
 * not the canonical encoding in variant v, -ENOSPC if cap is too small. */
int b64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *in,
	       size_t len, enum b64_variant v);

#endif
