/*
 * hubapi.h - the subset of the Hugging Face hub's HTTP API that downloads need:
 *
 *   GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
 *       -> {"sha": commit, "siblings": [{"rfilename", "blobId", "size",
 *                                       "lfs": {"sha256", "size"}}...]}
 *   GET {endpoint}/{repo}/resolve/{commit}/{file}
 *       -> the bytes, usually through a redirect to a CDN; the hub's own response carries
 *          X-Repo-Commit, ETag (the git blob id) and, for LFS files, X-Linked-Etag (sha256).
 *
 * {endpoint} is $HF_ENDPOINT, else the public hub; the token is $HF_TOKEN, else
 * $HUGGING_FACE_HUB_TOKEN, else the file huggingface_hub's login writes ($HF_TOKEN_PATH, else
 * $HF_HOME/token, else ~/.cache/huggingface/token). It goes to the hub as a Bearer header and
 * never to the CDN a redirect points at (libcurl drops custom auth headers on a host change).
 *
 * Everything in a reply is untrusted: file names that could leave the snapshot folder
 * (absolute, "..", empty parts, backslashes, control bytes) and malformed ids are refused.
 * Any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The public hub, used when $HF_ENDPOINT is unset. */
#define HEARTH_HUB_DEFAULT_ENDPOINT "https://huggingface.co"

typedef struct {
    char    path[512]; /* rfilename: relative, '/'-separated, checked */
    int64_t size;      /* bytes */
    char    oid[72];   /* sha256 (64 hex) for LFS files, git blob sha1 (40 hex) otherwise */
    bool    lfs;
} hearth_hub_file;

typedef struct {
    char             commit[48]; /* 40 hex */
    hearth_hub_file *files;      /* owned, malloc'ed */
    size_t           n_files;
} hearth_hub_revision;

/* $HF_ENDPOINT without a trailing '/', else the default, into buf. False when it does not fit. */
bool hearth_hub_endpoint(char *buf, size_t n);
/* The token (see above) into buf; false when there is none. */
bool hearth_hub_token(char *buf, size_t n);
/* Is path a safe relative file name for a snapshot folder? */
bool hearth_hub_valid_path(const char *path);
/* Is rev a revision we can put in a URL and under refs/: a branch, tag or commit
 * ([A-Za-z0-9._/-], no "..", no leading or trailing '/')? */
bool hearth_hub_valid_revision(const char *rev);

/* Parse a revision reply (json, n bytes). The reply must have a 40-hex "sha" and siblings;
 * siblings without a usable checksum are refused (HEARTH_E_FORMAT naming the file). */
hearth_status hearth_hub_revision_parse(const char *json, size_t n, hearth_hub_revision *out, hearth_err *err);
void          hearth_hub_revision_free(hearth_hub_revision *r);

/* Fetch and parse the revision info. A 401/403 says the repo is gated or private (and whether
 * a token was sent); 404 names the repo and revision. */
hearth_status hearth_hub_revision_fetch(const char *endpoint, const char *token, const char *repo_id,
                                        const char *revision, hearth_hub_revision *out, hearth_err *err);

/* {endpoint}/{repo}/resolve/{commit}/{path} with path segments percent-escaped, into buf. */
bool hearth_hub_resolve_url(const char *endpoint, const char *repo_id, const char *commit, const char *path,
                            char *buf, size_t n);

/* The user-agent hearth sends. */
#define HEARTH_HUB_USER_AGENT "hearth/" HEARTH_VERSION
