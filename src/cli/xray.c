// SPDX-License-Identifier: MIT
/*
 * -xray FILE: the layout of one ciphertext file as gocryptfs-xray prints it
 * (spec §6.4), without a key: the header, then for each block its nonce
 * ("IV"), tag, offset and length, everything on stdout, exit code 1 on any
 * problem. The layout is AES-GCM's unless -aessiv or -xchacha says
 * otherwise (-aessiv wins, as in gocryptfs-xray); holes show as all-zero IV
 * and tag. The messages for broken files are gocryptfs-xray's too, so that
 * the two can be compared. A FIFO is read without blocking.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "crypto/aead.h"
#include "crypto/content.h"
#include "exitcodes.h"

/* gocryptfs-xray exits 1 on every error. */
#define XRAY_FAIL 1

/* An errno as Go spells it: strerror in lower case. */
static void print_errno(const char *op, const char *path, int err)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "%s", strerror(err));
	msg[0] = (char)tolower((unsigned char)msg[0]);
	printf("%s %s: %s\n", op, path, msg);
}

/* Read up to len bytes; returns the count or -errno. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, buf + done, len - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break; /* a FIFO without data */
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static void print_hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* spec §3.1: BE16(2) || 16-byte file ID, neither all zero. */
static int print_header(const uint8_t hdr[static CONTENT_HEADER_LEN],
			enum aead_cipher c)
{
	unsigned version = (unsigned)hdr[0] << 8 | hdr[1];
	const char *what = NULL;

	if (all_zero(hdr, CONTENT_HEADER_LEN))
		what = "header is all-zero";
	else if (version == CONTENT_HEADER_VERSION &&
		 all_zero(hdr + 2, CONTENT_FILE_ID_LEN))
		what = "file id is all-zero";
	if (what || version != CONTENT_HEADER_VERSION) {
		if (what)
			printf("ParseHeader: %s. Header hexdump: ", what);
		else
			printf("ParseHeader: invalid version, want=%d have=%u. "
			       "Header hexdump: ", CONTENT_HEADER_VERSION,
			       version);
		print_hex(hdr, CONTENT_HEADER_LEN);
		printf("\n");
		return XRAY_FAIL;
	}
	printf("Header: Version: %u, Id: ", version);
	print_hex(hdr + 2, CONTENT_FILE_ID_LEN);
	printf(", assuming %s mode\n", aead_cipher_name(c));
	return 0;
}

static void print_block(uint64_t n, const uint8_t *b, size_t len,
			size_t nonce_len, enum aead_cipher c, uint64_t off)
{
	/* The tag ends the block, except with AES-SIV, where the SIV follows
	 * the nonce (spec §3.6). */
	const uint8_t *tag = c == AEAD_AES_SIV_512 ? b + nonce_len :
						     b + len - AEAD_TAG_LEN;

	printf("Block %2ju: IV: ", (uintmax_t)n);
	print_hex(b, nonce_len);
	printf(", Tag: ");
	print_hex(tag, AEAD_TAG_LEN);
	printf(", Offset: %5ju Len: %zu\n", (uintmax_t)off, len);
}

int cli_xray(const struct args *a)
{
	enum aead_cipher c = a->aessiv	? AEAD_AES_SIV_512 :
			     a->xchacha ? AEAD_XCHACHA20_POLY1305 :
					  AEAD_AES_GCM_256;
	size_t nonce_len = aead_cipher_nonce_len(c);
	size_t cbs = CONTENT_PLAIN_BS + nonce_len + AEAD_TAG_LEN;
	uint8_t hdr[CONTENT_HEADER_LEN], buf[CONTENT_MAX_CIPHER_BS];
	uint64_t off = CONTENT_HEADER_LEN;
	const char *path;
	ssize_t n;
	int fd, ex;

	ex = cli_want_args(a, 1, "-xray", "FILE");
	if (ex)
		return ex;
	path = a->pos[0];
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		print_errno("open", path, errno);
		return XRAY_FAIL;
	}
	n = read_full(fd, hdr, sizeof(hdr));
	if (n < 0) {
		print_errno("read", path, (int)-n);
		ex = XRAY_FAIL;
		goto out;
	}
	if (n == 0) {
		printf("empty file\n");
		goto out;
	}
	if ((size_t)n < sizeof(hdr)) {
		printf("incomplete file header: read %zd bytes, want %d\n", n,
		       CONTENT_HEADER_LEN);
		ex = XRAY_FAIL;
		goto out;
	}
	ex = print_header(hdr, c);
	for (uint64_t blk = 0; !ex; blk++) {
		n = read_full(fd, buf, cbs);
		if (n < 0) {
			print_errno("read", path, (int)-n);
			ex = XRAY_FAIL;
		} else if (n == 0) {
			break;
		} else if ((size_t)n <= nonce_len + AEAD_TAG_LEN) {
			/* No room for one byte of data (spec §3.8). */
			printf("corrupt block: truncated data, len=%zd\n", n);
			ex = XRAY_FAIL;
		} else {
			print_block(blk, buf, (size_t)n, nonce_len, c, off);
			off += (uint64_t)n;
		}
	}
out:
	close(fd);
	return ex;
}
