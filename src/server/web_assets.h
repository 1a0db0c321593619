/*
 * web_assets.h - the web app's files (src/server/web/), embedded into the binary at build time.
 *
 * scripts/embed_assets.cmake writes the table into the build directory (web_assets.c) from
 * the files CMakeLists.txt lists; web.c serves it. Each entry is NUL-terminated past len, so
 * the bytes may be read as a C string in tests.
 */
#pragma once
#include <stddef.h>

typedef struct {
    const char          *path;  /* URL path: "/index.html", "/app.js", ... */
    const char          *ctype; /* Content-Type */
    const char          *etag;  /* quoted strong ETag: the first 16 hex digits of the SHA-256 */
    const unsigned char *data;  /* [len] bytes, then a NUL */
    size_t               len;
} hearth_web_asset;

extern const hearth_web_asset hearth_web_assets[];
extern const size_t           hearth_web_n_assets;

/* The OpenAPI description of the HTTP API (src/server/api/openapi.json), embedded the same way
 * (api_assets.c) and served at /openapi.json. */
extern const hearth_web_asset hearth_api_assets[];
extern const size_t           hearth_api_n_assets;

/* The asset at URL path, or NULL. */
const hearth_web_asset *hearth_web_asset_find(const char *path);
