/* SPDX-License-Identifier: MIT */
/*
 * gocryptfs.conf load/validate/save (spec §1.1-1.5). Reading mirrors Go's
 * encoding/json into gocryptfs's struct: keys match case-insensitively, the
 * last duplicate wins, unknown keys are ignored, null leaves a field at its
 * zero value, and a value of the wrong JSON type is an error. []byte fields
 * are standard padded base64 decoded the way Go does (CR/LF ignored, trailing
 * bits not checked). Writing produces byte-identical output to gocryptfs.
 */
#include "config/conf.h"

#include "common/b64.h"
#include "common/openreg.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const flag_names[CONF_FLAG_COUNT] = {
	[CONF_FLAG_PLAINTEXTNAMES] = "PlaintextNames",
	[CONF_FLAG_DIRIV] = "DirIV",
	[CONF_FLAG_EMENAMES] = "EMENames",
	[CONF_FLAG_GCMIV128] = "GCMIV128",
	[CONF_FLAG_LONGNAMES] = "LongNames",
	[CONF_FLAG_LONGNAMEMAX] = "LongNameMax",
	[CONF_FLAG_AESSIV] = "AESSIV",
	[CONF_FLAG_RAW64] = "Raw64",
	[CONF_FLAG_HKDF] = "HKDF",
	[CONF_FLAG_FIDO2] = "FIDO2",
	[CONF_FLAG_XCHACHA20POLY1305] = "XChaCha20Poly1305",
};

static void seterr(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CONF_ERR_LEN, fmt, ap);
	va_end(ap);
}

const char *conf_flag_name(enum conf_flag f)
{
	if ((unsigned)f >= CONF_FLAG_COUNT)
		return "?";
	return flag_names[f];
}

int conf_flag_parse(const char *s)
{
	for (int i = 0; i < CONF_FLAG_COUNT; i++)
		if (strcmp(s, flag_names[i]) == 0)
			return i;
	return -1;
}

bool conf_has(const struct conf *c, enum conf_flag f)
{
	for (size_t i = 0; i < c->nflags; i++)
		if (c->flags[i] == f)
			return true;
	return false;
}

void conf_add_flag(struct conf *c, enum conf_flag f)
{
	if (c->nflags < CONF_MAX_FLAGS)
		c->flags[c->nflags++] = f;
}

void conf_init(struct conf *c)
{
	memset(c, 0, sizeof(*c));
}

void conf_fini(struct conf *c)
{
	free(c->creator);
	memset(c, 0, sizeof(*c));
}

int conf_set_creator(struct conf *c, const char *creator)
{
	char *s = strdup(creator);

	if (!s)
		return -ENOMEM;
	free(c->creator);
	c->creator = s;
	return 0;
}

int conf_cipher(const struct conf *c)
{
	if (conf_has(c, CONF_FLAG_XCHACHA20POLY1305))
		return 2;
	if (conf_has(c, CONF_FLAG_AESSIV))
		return 1;
	return 0;
}

int conf_logn(const struct conf *c)
{
	int64_t n = c->scrypt.n;

	if (n < 2 || (n & (n - 1)) != 0)
		return -1;
	return __builtin_ctzll((unsigned long long)n);
}

/* ---- reading ---------------------------------------------------------- */

static int b64val(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Go's base64.StdEncoding.DecodeString: '\r' and '\n' are skipped, padding
 * is required, non-zero trailing bits are accepted. */
static int go_b64_decode(uint8_t *out, size_t cap, size_t *outlen,
			 const char *in)
{
	size_t len = strlen(in), m = 0, pad = 0, n = 0;
	char *s = malloc(len + 1);
	int rc = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		if (in[i] != '\r' && in[i] != '\n')
			s[m++] = in[i];
	if (m % 4) {
		rc = -EINVAL;
		goto out;
	}
	if (m && s[m - 1] == '=')
		pad = (m >= 2 && s[m - 2] == '=') ? 2 : 1;
	for (size_t i = 0; i < m; i += 4) {
		unsigned v = 0;
		size_t k = (i + 4 == m) ? 3 - pad : 3;

		for (size_t j = 0; j < 4; j++) {
			int d = 0;

			if (j < k + 1) {
				d = b64val(s[i + j]);
				if (d < 0) {
					rc = -EINVAL;
					goto out;
				}
			}
			v = (v << 6) | (unsigned)d;
		}
		if (n + k > cap) {
			rc = -ENOSPC;
			goto out;
		}
		out[n++] = (uint8_t)(v >> 16);
		if (k > 1)
			out[n++] = (uint8_t)(v >> 8);
		if (k > 2)
			out[n++] = (uint8_t)v;
	}
	*outlen = n;
out:
	free(s);
	return rc;
}

static const char *jtype(const struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "bool";
	case json_type_double:
	case json_type_int:
		return "number";
	case json_type_object:
		return "object";
	case json_type_array:
		return "array";
	case json_type_string:
		return "string";
	}
	return "value";
}

static int get_int(int64_t *out, struct json_object *v, const char *field,
		   int64_t min, int64_t max, char *err)
{
	int64_t x;

	if (json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_int)) {
		seterr(err, "field %s: cannot unmarshal %s into an integer",
		       field, jtype(v));
		return -EINVAL;
	}
	x = json_object_get_int64(v);
	if (x == INT64_MAX || x == INT64_MIN || x < min || x > max) {
		seterr(err, "field %s: value out of range", field);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int get_bytes(uint8_t *out, size_t cap, size_t *outlen,
		     struct json_object *v, const char *field, char *err)
{
	int rc;

	if (json_object_is_type(v, json_type_null)) {
		*outlen = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string)) {
		seterr(err, "field %s: cannot unmarshal %s into base64 bytes",
		       field, jtype(v));
		return -EINVAL;
	}
	rc = go_b64_decode(out, cap, outlen, json_object_get_string(v));
	if (rc == -ENOSPC) {
		seterr(err, "field %s: too long", field);
		return -EINVAL;
	}
	if (rc) {
		seterr(err, "field %s: illegal base64 data", field);
		return -EINVAL;
	}
	return 0;
}

static int parse_scrypt(struct conf *c, struct json_object *obj, char *err)
{
	int rc = 0;

	if (json_object_is_type(obj, json_type_null))
		return 0;
	if (!json_object_is_type(obj, json_type_object)) {
		seterr(err, "field ScryptObject: cannot unmarshal %s into an "
			    "object", jtype(obj));
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, val)
	{
		if (strcasecmp(key, "Salt") == 0)
			rc = get_bytes(c->scrypt.salt, sizeof(c->scrypt.salt),
				       &c->scrypt.salt_len, val,
				       "ScryptObject.Salt", err);
		else if (strcasecmp(key, "N") == 0)
			rc = get_int(&c->scrypt.n, val, "ScryptObject.N",
				     INT64_MIN, INT64_MAX, err);
		else if (strcasecmp(key, "R") == 0)
			rc = get_int(&c->scrypt.r, val, "ScryptObject.R",
				     INT64_MIN, INT64_MAX, err);
		else if (strcasecmp(key, "P") == 0)
			rc = get_int(&c->scrypt.p, val, "ScryptObject.P",
				     INT64_MIN, INT64_MAX, err);
		else if (strcasecmp(key, "KeyLen") == 0)
			rc = get_int(&c->scrypt.key_len, val,
				     "ScryptObject.KeyLen", INT64_MIN,
				     INT64_MAX, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Unknown flags are remembered by name so validation can report them in
 * gocryptfs's order (after the version and scrypt checks). */
struct parse_state {
	char unknown_flag[64];
	bool have_unknown;
};

static int parse_flags(struct conf *c, struct json_object *arr,
		       struct parse_state *ps, char *err)
{
	size_t n;

	c->nflags = 0;
	ps->have_unknown = false;
	if (json_object_is_type(arr, json_type_null))
		return 0;
	if (!json_object_is_type(arr, json_type_array)) {
		seterr(err, "field FeatureFlags: cannot unmarshal %s into a "
			    "list of strings", jtype(arr));
		return -EINVAL;
	}
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		const char *s = "";
		int f;

		if (v && !json_object_is_type(v, json_type_null)) {
			if (!json_object_is_type(v, json_type_string)) {
				seterr(err, "field FeatureFlags: cannot "
					    "unmarshal %s into a string",
				       jtype(v));
				return -EINVAL;
			}
			s = json_object_get_string(v);
		}
		f = conf_flag_parse(s);
		if (f < 0) {
			if (!ps->have_unknown) {
				snprintf(ps->unknown_flag,
					 sizeof(ps->unknown_flag), "%s", s);
				ps->have_unknown = true;
			}
			continue;
		}
		if (c->nflags >= CONF_MAX_FLAGS) {
			seterr(err, "field FeatureFlags: too many flags");
			return -EINVAL;
		}
		conf_add_flag(c, (enum conf_flag)f);
	}
	return 0;
}

/* The FIDO2 object (spec §1.9) is only type-checked, as Go's decoder does;
 * veilfs cannot use FIDO2 tokens. AssertOptions (gocryptfs >= 2.5) is
 * ignored, as by 2.3. */
static int parse_fido2(struct json_object *obj, char *err)
{
	uint8_t scratch[4096];
	size_t n;
	int rc = 0;

	if (!json_object_is_type(obj, json_type_object)) {
		seterr(err, "field FIDO2: cannot unmarshal %s into an object",
		       jtype(obj));
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, val)
	{
		if (strcasecmp(key, "CredentialID") == 0)
			rc = get_bytes(scratch, sizeof(scratch), &n, val,
				       "FIDO2.CredentialID", err);
		else if (strcasecmp(key, "HMACSalt") == 0)
			rc = get_bytes(scratch, sizeof(scratch), &n, val,
				       "FIDO2.HMACSalt", err);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_root(struct conf *c, struct json_object *root,
		      struct parse_state *ps, char *err)
{
	int rc = 0;

	if (json_object_is_type(root, json_type_null))
		return 0;
	if (!json_object_is_type(root, json_type_object)) {
		seterr(err, "cannot unmarshal %s into a config object",
		       jtype(root));
		return -EINVAL;
	}
	json_object_object_foreach(root, key, val)
	{
		if (strcasecmp(key, "Creator") == 0) {
			if (json_object_is_type(val, json_type_null))
				continue;
			if (!json_object_is_type(val, json_type_string)) {
				seterr(err, "field Creator: cannot unmarshal "
					    "%s into a string", jtype(val));
				return -EINVAL;
			}
			rc = conf_set_creator(c, json_object_get_string(val));
			if (rc) {
				seterr(err, "out of memory");
				return rc;
			}
		} else if (strcasecmp(key, "EncryptedKey") == 0) {
			rc = get_bytes(c->enc_key, sizeof(c->enc_key),
				       &c->enc_key_len, val, "EncryptedKey",
				       err);
		} else if (strcasecmp(key, "ScryptObject") == 0) {
			/* Like Go, a duplicate object updates the fields it
			 * names and keeps the others; null changes nothing. */
			rc = parse_scrypt(c, val, err);
		} else if (strcasecmp(key, "Version") == 0) {
			rc = get_int(&c->version, val, "Version", 0, 65535,
				     err);
		} else if (strcasecmp(key, "FeatureFlags") == 0) {
			rc = parse_flags(c, val, ps, err);
		} else if (strcasecmp(key, "FIDO2") == 0) {
			if (json_object_is_type(val, json_type_null)) {
				c->has_fido2_obj = false;
				continue;
			}
			rc = parse_fido2(val, err);
			if (rc)
				return rc;
			c->has_fido2_obj = true;
		} else if (strcasecmp(key, "LongNameMax") == 0) {
			rc = get_int(&c->longnamemax, val, "LongNameMax", 0,
				     255, err);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int validate(const struct conf *c, const struct parse_state *ps,
		    char *err)
{
	const struct conf_scrypt *s = &c->scrypt;
	bool x, siv, gcm128, pt;

	if (c->version != CONF_VERSION) {
		seterr(err, "Unsupported on-disk format %lld (field Version "
			    "must be 2)", (long long)c->version);
		return -EPROTO;
	}
	if (s->n < 1024) {
		seterr(err, "field ScryptObject.N: %lld is below the minimum "
			    "1024 (scryptn 10)", (long long)s->n);
		return -EPROTO;
	}
	if (s->r < 8) {
		seterr(err, "field ScryptObject.R: %lld is below the minimum 8",
		       (long long)s->r);
		return -EPROTO;
	}
	if (s->p < 1) {
		seterr(err, "field ScryptObject.P: %lld is below the minimum 1",
		       (long long)s->p);
		return -EPROTO;
	}
	if (s->salt_len < 32) {
		seterr(err, "field ScryptObject.Salt: %zu bytes is below the "
			    "minimum 32", s->salt_len);
		return -EPROTO;
	}
	if (s->key_len < 32) {
		seterr(err, "field ScryptObject.KeyLen: %lld is below the "
			    "minimum 32", (long long)s->key_len);
		return -EPROTO;
	}
	if (ps && ps->have_unknown) {
		seterr(err, "Unknown feature flag \"%s\"", ps->unknown_flag);
		return -EPROTO;
	}
	x = conf_has(c, CONF_FLAG_XCHACHA20POLY1305);
	siv = conf_has(c, CONF_FLAG_AESSIV);
	gcm128 = conf_has(c, CONF_FLAG_GCMIV128);
	if (x && siv) {
		seterr(err, "FeatureFlags: can't have both XChaCha20Poly1305 "
			    "and AESSIV");
		return -EPROTO;
	}
	if (siv && !gcm128) {
		seterr(err, "FeatureFlags: AESSIV requires GCMIV128");
		return -EPROTO;
	}
	if (x && gcm128) {
		seterr(err, "FeatureFlags: XChaCha20Poly1305 conflicts with "
			    "GCMIV128");
		return -EPROTO;
	}
	if (x && !conf_has(c, CONF_FLAG_HKDF)) {
		seterr(err, "FeatureFlags: XChaCha20Poly1305 requires HKDF");
		return -EPROTO;
	}
	if (!x && !siv && !gcm128) {
		seterr(err, "FeatureFlags: AES-GCM requires GCMIV128");
		return -EPROTO;
	}
	pt = conf_has(c, CONF_FLAG_PLAINTEXTNAMES);
	if (pt) {
		static const enum conf_flag bad[] = {
			CONF_FLAG_EMENAMES, CONF_FLAG_DIRIV,
			CONF_FLAG_LONGNAMES, CONF_FLAG_RAW64,
			CONF_FLAG_LONGNAMEMAX,
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (conf_has(c, bad[i])) {
				seterr(err, "FeatureFlags: PlaintextNames "
					    "conflicts with %s",
				       conf_flag_name(bad[i]));
				return -EPROTO;
			}
		}
	}
	if (c->longnamemax != 0 && !conf_has(c, CONF_FLAG_LONGNAMEMAX)) {
		seterr(err, "field LongNameMax=%lld but the LongNameMax "
			    "feature flag is not set",
		       (long long)c->longnamemax);
		return -EPROTO;
	}
	if (c->longnamemax == 0 && conf_has(c, CONF_FLAG_LONGNAMEMAX)) {
		seterr(err, "field LongNameMax=0 but the LongNameMax feature "
			    "flag is set");
		return -EPROTO;
	}
	if (c->longnamemax != 0 && (c->longnamemax < 62 ||
				    c->longnamemax > 255)) {
		seterr(err, "field LongNameMax: %lld is outside 62..255",
		       (long long)c->longnamemax);
		return -EPROTO;
	}
	return 0;
}

int conf_validate(const struct conf *c, char err[static CONF_ERR_LEN])
{
	return validate(c, NULL, err);
}

int conf_validate_unlock(const struct conf *c, char err[static CONF_ERR_LEN])
{
	if (conf_logn(c) < 0) {
		seterr(err, "field ScryptObject.N: %lld is not a power of two",
		       (long long)c->scrypt.n);
		return -EPROTO;
	}
	if (c->scrypt.key_len != 32) {
		seterr(err, "field ScryptObject.KeyLen: %lld is not 32",
		       (long long)c->scrypt.key_len);
		return -EPROTO;
	}
	if (conf_has(c, CONF_FLAG_FIDO2) && !c->has_fido2_obj) {
		seterr(err, "FeatureFlags: FIDO2 is set but the FIDO2 field "
			    "is missing");
		return -EPROTO;
	}
	return 0;
}

/* ---- strict JSON syntax (RFC 8259) ----------------------------------- */

/* json-c accepts more than JSON (single-quoted strings, for one); Go does
 * not. This checks the grammar first so that we refuse what Go refuses. */
#define JSON_MAX_DEPTH 10000 /* Go's encoding/json nesting limit */

struct jscan {
	const char *p, *end;
	unsigned depth;
};

static void js_ws(struct jscan *j)
{
	while (j->p < j->end && strchr(" \t\r\n", *j->p) && *j->p)
		j->p++;
}

static bool js_lit(struct jscan *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static bool js_digits(struct jscan *j)
{
	const char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool js_number(struct jscan *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!js_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!js_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!js_digits(j))
			return false;
	}
	return true;
}

static bool js_string(struct jscan *j)
{
	j->p++; /* opening quote */
	while (j->p < j->end) {
		unsigned char ch = (unsigned char)*j->p++;

		if (ch == '"')
			return true;
		if (ch < 0x20)
			return false;
		if (ch != '\\')
			continue;
		if (j->p >= j->end)
			return false;
		ch = (unsigned char)*j->p++;
		if (ch == 'u') {
			for (int i = 0; i < 4; i++, j->p++)
				if (j->p >= j->end || !strchr("0123456789abcdef"
							     "ABCDEF", *j->p) ||
				    !*j->p)
					return false;
		} else if (!strchr("\"\\/bfnrt", ch) || !ch) {
			return false;
		}
	}
	return false;
}

static bool js_value(struct jscan *j);

static bool js_container(struct jscan *j, char close, bool object)
{
	bool ok = false;

	if (++j->depth > JSON_MAX_DEPTH)
		return false;
	j->p++;
	js_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		ok = true;
		goto out;
	}
	for (;;) {
		if (object) {
			if (j->p >= j->end || *j->p != '"' || !js_string(j))
				goto out;
			js_ws(j);
			if (j->p >= j->end || *j->p != ':')
				goto out;
			j->p++;
		}
		if (!js_value(j))
			goto out;
		js_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			js_ws(j);
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			ok = true;
		}
		goto out;
	}
out:
	j->depth--;
	return ok;
}

static bool js_value(struct jscan *j)
{
	js_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		return js_container(j, '}', true);
	case '[':
		return js_container(j, ']', false);
	case '"':
		return js_string(j);
	case 't':
		return js_lit(j, "true");
	case 'f':
		return js_lit(j, "false");
	case 'n':
		return js_lit(j, "null");
	default:
		return js_number(j);
	}
}

/* 0 if text is one JSON value (with surrounding whitespace), else the
 * offset + 1 where it stops being JSON. */
static size_t json_syntax_error(const char *text, size_t len)
{
	struct jscan j = { .p = text, .end = text + len, .depth = 0 };

	if (js_value(&j)) {
		js_ws(&j);
		if (j.p == j.end)
			return 0;
	}
	return (size_t)(j.p - text) + 1;
}

int conf_parse(struct conf *c, const char *text, size_t len,
	       char err[static CONF_ERR_LEN])
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL;
	struct parse_state ps = { .have_unknown = false };
	enum json_tokener_error jerr;
	size_t end;
	int rc;

	err[0] = '\0';
	if (len == 0) {
		seterr(err, "Config file is empty");
		return -EINVAL;
	}
	if (len > INT_MAX) {
		seterr(err, "config file too large");
		return -EINVAL;
	}
	end = json_syntax_error(text, len);
	if (end) {
		seterr(err, "invalid JSON at offset %zu", end - 1);
		return -EINVAL;
	}
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue && memchr(text, '\0', len) == NULL) {
		/* A bare literal or number at the very end: a NUL byte tells
		 * json-c the input is over. */
		root = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
	}
	if (jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			seterr(err, "invalid JSON: unexpected end of input");
		else
			seterr(err, "invalid JSON at offset %zu: %s", end,
			       json_tokener_error_desc(jerr));
		rc = -EINVAL;
		goto out;
	}
	/* Go rejects anything but whitespace after the value. */
	for (; end < len; end++) {
		if (!strchr(" \t\r\n", text[end])) {
			seterr(err, "invalid JSON: data after the top-level "
				    "value at offset %zu", end);
			rc = -EINVAL;
			goto out;
		}
	}
	rc = parse_root(c, root, &ps, err);
	if (rc)
		goto out;
	rc = validate(c, &ps, err);
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

int conf_load(struct conf *c, const char *path, char err[static CONF_ERR_LEN])
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	int fd, rc;

	/* Whoever can write the cipherdir can put a FIFO or a device node
	 * there, or a symlink to one: only a regular file is opened. */
	fd = openreg_at(AT_FDCWD, path, O_RDONLY, true, &st);
	if (fd == -EFTYPE_NOTREG) {
		seterr(err, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (fd < 0) {
		rc = fd;
		seterr(err, "open %s: %s", path, strerror(-rc));
		return rc;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= (1u << 20)) {
				seterr(err, "%s: config file too large", path);
				rc = -EINVAL;
				goto out;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				seterr(err, "out of memory");
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			seterr(err, "read %s: %s", path, strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rc = conf_parse(c, buf ? buf : "", len, err);
out:
	free(buf);
	close(fd);
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

static struct json_object *b64_string(const uint8_t *p, size_t n)
{
	size_t elen = b64_encoded_len(n, B64_STD);
	struct json_object *o;
	char *s = malloc(elen + 1);

	if (!s)
		return NULL;
	b64_encode(s, p, n, B64_STD);
	o = json_object_new_string(s);
	free(s);
	return o;
}

/* json_object_object_add takes ownership even on failure only in newer
 * json-c; check both the value and the add. */
static int add(struct json_object *obj, const char *key,
	       struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

char *conf_to_json(const struct conf *c)
{
	struct json_object *root = NULL, *so = NULL, *flags = NULL;
	const char *txt;
	char *out = NULL;
	size_t n;

	root = json_object_new_object();
	if (!root)
		return NULL;
	if (add(root, "Creator",
		json_object_new_string(c->creator ? c->creator : "")))
		goto out;
	if (add(root, "EncryptedKey", b64_string(c->enc_key, c->enc_key_len)))
		goto out;
	so = json_object_new_object();
	if (add(root, "ScryptObject", so))
		goto out;
	if (add(so, "Salt", b64_string(c->scrypt.salt, c->scrypt.salt_len)) ||
	    add(so, "N", json_object_new_int64(c->scrypt.n)) ||
	    add(so, "R", json_object_new_int64(c->scrypt.r)) ||
	    add(so, "P", json_object_new_int64(c->scrypt.p)) ||
	    add(so, "KeyLen", json_object_new_int64(c->scrypt.key_len)))
		goto out;
	if (add(root, "Version", json_object_new_int64(c->version)))
		goto out;
	flags = json_object_new_array();
	if (add(root, "FeatureFlags", flags))
		goto out;
	for (size_t i = 0; i < c->nflags; i++) {
		struct json_object *s =
			json_object_new_string(conf_flag_name(c->flags[i]));

		if (!s || json_object_array_add(flags, s) != 0) {
			json_object_put(s);
			goto out;
		}
	}
	if (c->longnamemax &&
	    add(root, "LongNameMax", json_object_new_int64(c->longnamemax)))
		goto out;
	txt = json_object_to_json_string_ext(root,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_PRETTY_TAB |
		JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!txt)
		goto out;
	n = strlen(txt);
	out = malloc(n + 2);
	if (!out)
		goto out;
	memcpy(out, txt, n);
	out[n] = '\n';
	out[n + 1] = '\0';
out:
	json_object_put(root);
	return out;
}

static int fsync_dir_of(const char *path)
{
	char *dir = strdup(path);
	char *slash;
	int fd, rc = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
	} else {
		if (fsync(fd) != 0)
			rc = -errno;
		close(fd);
	}
	free(dir);
	return rc;
}

int conf_save(const struct conf *c, const char *path,
	      char err[static CONF_ERR_LEN])
{
	char *json = NULL, *tmp = NULL;
	size_t len, off = 0;
	int fd = -1, rc;

	err[0] = '\0';
	if (c->has_fido2_obj || conf_has(c, CONF_FLAG_FIDO2)) {
		seterr(err, "writing FIDO2 configs is not supported");
		return -EOPNOTSUPP;
	}
	rc = conf_validate(c, err);
	if (!rc)
		rc = conf_validate_unlock(c, err);
	if (rc)
		return rc;
	json = conf_to_json(c);
	if (!json) {
		seterr(err, "cannot serialise the config");
		return -ENOMEM;
	}
	len = strlen(json);
	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
		seterr(err, "out of memory");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0) {
		rc = -errno;
		seterr(err, "create %s: %s", tmp, strerror(-rc));
		free(tmp);
		tmp = NULL; /* not ours: never unlink a stale .tmp */
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, json + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			seterr(err, "write %s: %s", tmp, strerror(-rc));
			goto out;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0) {
		rc = -errno;
		seterr(err, "fsync %s: %s", tmp, strerror(-rc));
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = -errno;
		seterr(err, "close %s: %s", tmp, strerror(-rc));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = -errno;
		seterr(err, "rename %s: %s", tmp, strerror(-rc));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	rc = fsync_dir_of(path);
	if (rc) {
		/* The new file is in place; only durability is in doubt. */
		sync();
		rc = 0;
	}
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(json);
	return rc;
}
