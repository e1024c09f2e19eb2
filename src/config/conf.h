/* SPDX-License-Identifier: MIT */
/*
 * gocryptfs.conf (spec §1): load with json-c as tolerantly as Go's
 * encoding/json (case-insensitive keys, unknown keys ignored, last duplicate
 * wins, null means "zero value"), validate by the rules of spec §1.5, and
 * save atomically in exactly the layout gocryptfs writes (tab-indented JSON,
 * fields in the order of §1.2, trailing newline, mode 0400). The master key
 * itself is never here: EncryptedKey is opaque to this module.
 */
#ifndef CONFIG_CONF_H
#define CONFIG_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONF_FILENAME "gocryptfs.conf"
#define CONF_REVERSE_FILENAME ".gocryptfs.reverse.conf"
#define CONF_VERSION 2
#define CONF_ERR_LEN 256
/* Upper bounds we accept when reading; gocryptfs writes 64 and 32. */
#define CONF_MAX_ENCKEY 256
#define CONF_MAX_SALT 1024
#define CONF_MAX_FLAGS 64

/* Feature flags (spec §1.3), as bits; the enum value is the bit number. */
enum conf_flag {
	CONF_FLAG_PLAINTEXTNAMES = 0,
	CONF_FLAG_DIRIV,
	CONF_FLAG_EMENAMES,
	CONF_FLAG_GCMIV128,
	CONF_FLAG_LONGNAMES,
	CONF_FLAG_LONGNAMEMAX,
	CONF_FLAG_AESSIV,
	CONF_FLAG_RAW64,
	CONF_FLAG_HKDF,
	CONF_FLAG_FIDO2,
	CONF_FLAG_XCHACHA20POLY1305,
	CONF_FLAG_COUNT
};

struct conf_scrypt {
	uint8_t salt[CONF_MAX_SALT];
	size_t salt_len;
	int64_t n;
	int64_t r;
	int64_t p;
	int64_t key_len;
};

struct conf {
	char *creator;			/* owned, may be NULL (empty) */
	uint8_t enc_key[CONF_MAX_ENCKEY];
	size_t enc_key_len;
	struct conf_scrypt scrypt;
	int64_t version;
	/* FeatureFlags in file order (duplicates kept, as Go keeps them). */
	enum conf_flag flags[CONF_MAX_FLAGS];
	size_t nflags;
	bool has_fido2_obj;		/* a non-null "FIDO2" object */
	int64_t longnamemax;		/* 0 when absent */
};

/* Name of a flag as written in the file, e.g. "XChaCha20Poly1305". */
const char *conf_flag_name(enum conf_flag f);
/* Look up a flag string (case-sensitive, as gocryptfs). -1 if unknown. */
int conf_flag_parse(const char *s);
bool conf_has(const struct conf *c, enum conf_flag f);
/* Append f to the flag list (no duplicate check). */
void conf_add_flag(struct conf *c, enum conf_flag f);

/* Zero c (caller-embedded). conf_fini frees what conf_parse/conf_load
 * allocated; calling it on a zeroed conf is fine. */
void conf_init(struct conf *c);
void conf_fini(struct conf *c);
/* Replace the Creator string (copied). Returns 0 or -ENOMEM. */
int conf_set_creator(struct conf *c, const char *creator);

/*
 * Parse len bytes of JSON text into c (conf_init'ed by the caller) and
 * validate it. Returns 0; -EINVAL if the text is not a gocryptfs config
 * (empty, JSON syntax, wrong types, bad base64); -EPROTO if it parses but
 * fails validation (spec §1.5) or names an unknown feature flag. On error a
 * one-line reason naming the field is written to err (CONF_ERR_LEN bytes).
 * Caller calls conf_fini in every case.
 */
int conf_parse(struct conf *c, const char *text, size_t len,
	       char err[static CONF_ERR_LEN]);

/* Read and parse a config file. Returns what conf_parse returns, or the
 * negative errno of open/read (err says which). */
int conf_load(struct conf *c, const char *path, char err[static CONF_ERR_LEN]);

/* The structural checks of spec §1.5 (the ones gocryptfs applies on every
 * load). Returns 0 or -EPROTO with a reason in err. */
int conf_validate(const struct conf *c, char err[static CONF_ERR_LEN]);
/* The checks gocryptfs only makes when unlocking (spec §1.5): N a power of
 * two, KeyLen exactly 32, FIDO2 object present if flagged. 0 or -EPROTO. */
int conf_validate_unlock(const struct conf *c, char err[static CONF_ERR_LEN]);

/* Serialise to the exact text gocryptfs writes (JSON + "\n"). Returns a
 * malloc'ed NUL-terminated string (caller frees) or NULL on failure. */
char *conf_to_json(const struct conf *c);

/*
 * Validate (both rule sets) and write atomically (spec §1.1): create
 * "<path>.tmp" with O_EXCL and mode 0400 (fails with -EEXIST if a stale one
 * exists), write, fsync, rename over path, fsync the directory. On failure
 * the old file is untouched and the .tmp is removed if we created it.
 * Returns 0 or a negative errno; err says what failed.
 */
int conf_save(const struct conf *c, const char *path,
	      char err[static CONF_ERR_LEN]);

/* Content cipher the flags select (spec §1.4): 0 GCM, 1 SIV, 2 XChaCha --
 * the values of enum aead_cipher. */
int conf_cipher(const struct conf *c);
/* log2(N) if N is a power of two, else -1. */
int conf_logn(const struct conf *c);

#endif
