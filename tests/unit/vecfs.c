/* SPDX-License-Identifier: MIT */
/* Walk a vector variant's cipher tree with our own modules (vecfs.h). */
#include "vecfs.h"

#include "crypto/aead.h"
#include "crypto/content.h"
#include "crypto/kdf.h"
#include "crypto/names.h"
#include "harness.h"
#include "vecutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#define DIAG(...)                                    \
	do {                                         \
		printf("# vecfs: ");                 \
		printf(__VA_ARGS__);                 \
		printf("\n");                        \
	} while (0)

int vec_fs_open(struct vec_fs *fs, const char *variant,
		const struct aead_impl *impl)
{
	char path[PATH_MAX];
	uint8_t *txt = NULL;
	const char *info, *p;
	size_t len;
	int rc = -EINVAL;

	memset(fs, 0, sizeof(*fs));
	fs->variant = variant;
	if (vec_path(path, sizeof(path), variant, "masterkey.hex"))
		return -ENAMETOOLONG;
	txt = vec_read_file(path, &len);
	if (!txt || th_unhex(fs->mk, 32, (const char *)txt) != 32)
		goto out;
	free(txt);
	if (vec_path(path, sizeof(path), variant, "cipher/gocryptfs.conf"))
		return -ENAMETOOLONG;
	txt = vec_read_file(path, &len);
	if (!txt)
		goto out;
	p = (const char *)txt;
	fs->np.plaintext = strstr(p, "\"PlaintextNames\"") != NULL;
	fs->np.raw64 = strstr(p, "\"Raw64\"") != NULL;
	fs->np.diriv = strstr(p, "\"DirIV\"") != NULL;
	fs->np.longnamemax = 255;
	if ((p = strstr(p, "\"LongNameMax\": ")))
		fs->np.longnamemax = (unsigned)atoi(p + 15);
	p = (const char *)txt;
	if (strstr(p, "\"XChaCha20Poly1305\"")) {
		fs->cipher = AEAD_XCHACHA20_POLY1305;
		info = KDF_INFO_XCHACHA;
	} else if (strstr(p, "\"AESSIV\"")) {
		fs->cipher = AEAD_AES_SIV_512;
		info = KDF_INFO_SIV;
	} else {
		fs->cipher = AEAD_AES_GCM_256;
		info = KDF_INFO_GCM;
	}
	fs->ckey_len = aead_cipher_key_len(fs->cipher);
	rc = kdf_hkdf_sha256(fs->eme_key, 32, fs->mk, 32, KDF_INFO_EME);
	if (rc)
		goto out;
	rc = kdf_hkdf_sha256(fs->ckey, fs->ckey_len, fs->mk, 32, info);
	if (rc)
		goto out;
	for (size_t i = 0; !impl && i < aead_impl_count(); i++)
		if (aead_impl_cipher(aead_impl_at(i)) == fs->cipher)
			impl = aead_impl_at(i);
	rc = -ENOENT;
	if (!impl || aead_impl_cipher(impl) != fs->cipher)
		goto out;
	rc = aead_new(&fs->aead, impl, fs->ckey, fs->ckey_len);
	if (rc)
		goto out;
	rc = content_new(&fs->content, fs->aead);
	if (rc)
		goto out;
	rc = names_new(&fs->names, fs->eme_key, &fs->np, fs->content);
out:
	free(txt);
	if (rc)
		vec_fs_close(fs);
	return rc;
}

void vec_fs_close(struct vec_fs *fs)
{
	names_free(fs->names);
	content_free(fs->content);
	aead_free(fs->aead);
	fs->names = NULL;
	fs->content = NULL;
	fs->aead = NULL;
}

struct namelist {
	char **v;
	size_t n;
};

static int nl_add(struct namelist *l, const char *s)
{
	char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static void nl_free(struct namelist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_small(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	close(fd);
	if (n < 0)
		return -EIO;
	*len = (size_t)n;
	return 0;
}

static int walk_dir(struct vec_fs *fs, const char *cdir, const char *pdir,
		    bool is_root, vec_entry_fn fn, void *arg)
{
	struct namelist got = { 0 }, want = { 0 };
	uint8_t iv[16] = { 0 };
	struct dirent *de;
	DIR *d = NULL;
	int rc = 0;

	if (!fs->np.plaintext && fs->np.diriv) {
		char p[PATH_MAX], buf[17];
		size_t n = 0;

		snprintf(p, sizeof(p), "%s/%s", cdir, NAMES_DIRIV_FILE);
		if (read_small(p, buf, sizeof(buf), &n) || n != 16) {
			DIAG("bad diriv in %s", cdir);
			return -EBADMSG;
		}
		memcpy(iv, buf, 16);
	}
	d = opendir(cdir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char cpath[PATH_MAX], ppath[PATH_MAX], sc[PATH_MAX];
		char cname[NAMES_MAX_SIDECAR + 2], stored[NAMES_MAX_CNAME];
		char name[NAMES_MAX_PLAIN + 1];
		struct vec_entry e = { 0 };
		size_t clen = 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (names_is_internal(fs->names, de->d_name, is_root))
			continue;
		e.is_long = !fs->np.plaintext && names_is_long(de->d_name);
		if (e.is_long) {
			snprintf(sc, sizeof(sc), "%s/%s%s", cdir, de->d_name,
				 NAMES_LONG_SUFFIX);
			rc = read_small(sc, cname, NAMES_MAX_SIDECAR + 1,
					&clen);
			if (rc || clen == 0 || clen > NAMES_MAX_SIDECAR) {
				DIAG("bad sidecar %s", sc);
				rc = -EBADMSG;
				goto out;
			}
			cname[clen] = '\0';
		} else {
			clen = strlen(de->d_name);
			memcpy(cname, de->d_name, clen + 1);
		}
		rc = names_decrypt(fs->names, iv, cname, clen, name,
				   sizeof(name));
		if (rc) {
			DIAG("%s/%s does not decrypt (%d)", cdir, de->d_name,
			     rc);
			goto out;
		}
		/* the stored name must be what we would store */
		if (names_store_name(fs->names, cname, stored,
				     sizeof(stored)) != (e.is_long ? 1 : 0) ||
		    strcmp(stored, de->d_name)) {
			DIAG("%s/%s: store name mismatch", cdir, de->d_name);
			rc = -EBADMSG;
			goto out;
		}
		rc = nl_add(&got, name);
		if (rc)
			goto out;
		snprintf(cpath, sizeof(cpath), "%s/%s", cdir, de->d_name);
		snprintf(ppath, sizeof(ppath), "%s/%s", pdir, name);
		e.cpath = cpath;
		e.ppath = ppath;
		e.stored = de->d_name;
		e.cname = cname;
		e.name = name;
		e.iv = iv;
		e.is_root = is_root;
		if (lstat(cpath, &e.cst)) {
			rc = -errno;
			goto out;
		}
		rc = fn ? fn(fs, &e, arg) : 0;
		if (rc)
			goto out;
		if (S_ISDIR(e.cst.st_mode)) {
			rc = walk_dir(fs, cpath, ppath, false, fn, arg);
			if (rc)
				goto out;
		}
	}
	closedir(d);
	d = opendir(pdir);
	if (!d) {
		DIAG("plain dir %s missing", pdir);
		rc = -ENOENT;
		goto out;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = nl_add(&want, de->d_name);
		if (rc)
			goto out;
	}
	qsort(got.v, got.n, sizeof(char *), cmpstr);
	qsort(want.v, want.n, sizeof(char *), cmpstr);
	if (got.n != want.n) {
		DIAG("%s: %zu names decrypted, %zu in plain/", cdir, got.n,
		     want.n);
		rc = -EBADMSG;
		goto out;
	}
	for (size_t i = 0; i < got.n; i++)
		if (strcmp(got.v[i], want.v[i])) {
			DIAG("%s: '%s' vs plain '%s'", cdir, got.v[i],
			     want.v[i]);
			rc = -EBADMSG;
			goto out;
		}
out:
	if (d)
		closedir(d);
	nl_free(&got);
	nl_free(&want);
	return rc;
}

int vec_fs_walk(struct vec_fs *fs, vec_entry_fn fn, void *arg)
{
	char c[PATH_MAX], p[PATH_MAX];

	if (vec_path(c, sizeof(c), fs->variant, "cipher") ||
	    vec_path(p, sizeof(p), fs->variant, "plain"))
		return -ENAMETOOLONG;
	return walk_dir(fs, c, p, true, fn, arg);
}
