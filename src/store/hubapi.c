/* hubapi.c - the hub's revision API and URLs; see hubapi.h. */
#include "store/hubapi.h"

#include "store/digest.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

enum { MAX_REPLY_BYTES = 64 << 20 };

bool hearth_hub_endpoint(char *buf, size_t n) {
    const char *e = getenv("HF_ENDPOINT");
    if (!e || !*e) e = HEARTH_HUB_DEFAULT_ENDPOINT;
    size_t len = strlen(e);
    while (len > 0 && e[len - 1] == '/') len--;
    if (len + 1 > n) return false;
    memcpy(buf, e, len);
    buf[len] = 0;
    return true;
}

static bool read_token_file(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return false;
    buf[strcspn(buf, "\r\n \t")] = 0;
    return buf[0] != 0;
}

bool hearth_hub_token(char *buf, size_t n) {
    const char *t = getenv("HF_TOKEN");
    if (!t || !*t) t = getenv("HUGGING_FACE_HUB_TOKEN");
    if (t && *t) return snprintf(buf, n, "%s", t) < (int)n;
    char path[4096];
    const char *p = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME"), *h = getenv("HOME");
    if (p && *p) return read_token_file(p, buf, n);
    if (home && *home) snprintf(path, sizeof path, "%s/token", home);
    else snprintf(path, sizeof path, "%s/.cache/huggingface/token", h && *h ? h : ".");
    return read_token_file(path, buf, n);
}

bool hearth_hub_valid_path(const char *path) {
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(((hearth_hub_file *)0)->path) || path[0] == '/') return false;
    const char *seg = path;
    for (const char *p = path;; p++) {
        if (*p == '/' || !*p) {
            size_t sl = (size_t)(p - seg);
            if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.')) return false;
            if (!*p) break;
            seg = p + 1;
        } else if ((unsigned char)*p < 0x20 || *p == '\\' || *p == 0x7f) {
            return false;
        }
    }
    return true;
}

bool hearth_hub_valid_revision(const char *rev) {
    size_t len = strlen(rev);
    if (len == 0 || len > 255 || rev[0] == '/' || rev[len - 1] == '/' || strstr(rev, "..") || strstr(rev, "//"))
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)rev[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-' && c != '/') return false;
    }
    return rev[0] != '.';
}

void hearth_hub_revision_free(hearth_hub_revision *r) {
    free(r->files);
    memset(r, 0, sizeof *r);
}

static int64_t num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15 ? (int64_t)v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

hearth_status hearth_hub_revision_parse(const char *json, size_t n, hearth_hub_revision *out, hearth_err *err) {
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_ParseWithLength(json, n);
    hearth_status st = HEARTH_OK;
    const char *sha = root ? str(root, "sha") : NULL;
    const cJSON *sib = root ? cJSON_GetObjectItemCaseSensitive(root, "siblings") : NULL;
    if (!cJSON_IsObject(root) || !sha || !hearth_digest_is_hex(sha, 40) || !cJSON_IsArray(sib)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "the hub's revision reply has no commit sha and file list");
        goto done;
    }
    snprintf(out->commit, sizeof out->commit, "%s", sha);
    int count = cJSON_GetArraySize(sib);
    out->files = calloc(count > 0 ? (size_t)count : 1, sizeof *out->files);
    if (!out->files) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done;
    }
    for (const cJSON *s = sib->child; s; s = s->next) {
        const char *name = str(s, "rfilename");
        if (!name || !hearth_hub_valid_path(name)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "the hub lists an unsafe file name '%.80s'",
                                name ? name : "(none)");
            goto done;
        }
        hearth_hub_file *f = &out->files[out->n_files];
        snprintf(f->path, sizeof f->path, "%s", name);
        const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(s, "lfs");
        const char *oid = cJSON_IsObject(lfs) ? str(lfs, "sha256") : str(s, "blobId");
        f->lfs = cJSON_IsObject(lfs);
        f->size = f->lfs ? num(lfs, "size") : num(s, "size");
        if (!oid || !hearth_digest_is_hex(oid, f->lfs ? 64 : 40) || f->size < 0) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1,
                                "the hub gives no usable checksum or size for '%.80s' (is ?blobs=true supported?)", name);
            goto done;
        }
        snprintf(f->oid, sizeof f->oid, "%s", oid);
        out->n_files++;
    }
done:
    cJSON_Delete(root);
    if (st) hearth_hub_revision_free(out);
    return st;
}

bool hearth_hub_resolve_url(const char *endpoint, const char *repo_id, const char *commit, const char *path,
                            char *buf, size_t n) {
    int w = snprintf(buf, n, "%s/%s/resolve/%s/", endpoint, repo_id, commit);
    if (w < 0 || (size_t)w >= n) return false;
    size_t off = (size_t)w;
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/';
        if (off + (plain ? 1 : 3) >= n) return false;
        if (plain) buf[off++] = (char)*p;
        else {
            buf[off++] = '%';
            buf[off++] = hex[*p >> 4];
            buf[off++] = hex[*p & 15];
        }
    }
    buf[off] = 0;
    return true;
}

/* ---- fetching ------------------------------------------------------------------------------ */

typedef struct {
    hearth_buf b;
    bool       too_big;
} reply_buf;

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
    reply_buf *b = user;
    size_t n = size * nmemb;
    if (b->b.len + n + 1 > MAX_REPLY_BYTES) {
        b->too_big = true;
        return 0;
    }
    return hearth_buf_put(&b->b, data, n) ? n : 0;
}

hearth_status hearth_hub_revision_fetch(const char *endpoint, const char *token, const char *repo_id,
                                        const char *revision, hearth_hub_revision *out, hearth_err *err) {
    memset(out, 0, sizeof *out);
    CURL *c = curl_easy_init();
    if (!c) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start libcurl");
    char *rev_esc = curl_easy_escape(c, revision, 0);
    char url[2048], auth[1200];
    struct curl_slist *hdr = NULL;
    reply_buf b = {0};
    hearth_status st = HEARTH_OK;
    if (!rev_esc || snprintf(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", endpoint, repo_id, rev_esc) >=
                        (int)sizeof url) {
        st = hearth_err_set(err, HEARTH_E_INVALID, -1, "the revision URL is too long");
        goto done;
    }
    if (token && *token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(hdr, auth);
    }
    hdr = curl_slist_append(hdr, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, HEARTH_HUB_USER_AGENT);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (b.too_big) {
        st = hearth_err_set(err, HEARTH_E_LIMIT, -1, "the hub's file list for %s is over %d MiB", repo_id,
                            MAX_REPLY_BYTES >> 20);
    } else if (rc != CURLE_OK) {
        st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot reach %s: %s", endpoint, curl_easy_strerror(rc));
    } else if (code == 401 || code == 403) {
        st = hearth_err_set(err, HEARTH_E_INVALID, -1,
                            "%s answered %ld for %s: the repo is gated or private%s. Accept its terms at "
                            "%s/%s and set HF_TOKEN to an access token",
                            endpoint, code, repo_id, token && *token ? " (the token sent was refused)" : "", endpoint,
                            repo_id);
    } else if (code == 404) {
        st = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "%s has no repo %s with a revision '%s'", endpoint, repo_id,
                            revision);
    } else if (code != 200) {
        st = hearth_err_set(err, HEARTH_E_IO, -1, "%s answered HTTP %ld for the file list of %s", endpoint, code,
                            repo_id);
    } else {
        st = hearth_hub_revision_parse(b.b.p ? b.b.p : "", b.b.len, out, err);
    }
done:
    hearth_buf_fini(&b.b);
    curl_slist_free_all(hdr);
    curl_free(rev_esc);
    curl_easy_cleanup(c);
    return st;
}
