/* test_web_assets.c - the embedded web app: every file present, typed, byte-identical to its
 * source, small (< 200 KB in all), self-contained (no CDN, no inline script), ETags distinct. */
#include "golden_json.h"
#include "server/web_assets.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(every_file_is_embedded_with_its_type) {
    const hearth_web_asset *html = hearth_web_asset_find("/index.html");
    const hearth_web_asset *js = hearth_web_asset_find("/app.js");
    const hearth_web_asset *css = hearth_web_asset_find("/app.css");
    CHECK(html && js && css);
    if (!html || !js || !css) return;
    CHECK(!strncmp(html->ctype, "text/html", 9));
    CHECK(!strncmp(js->ctype, "text/javascript", 15));
    CHECK(!strncmp(css->ctype, "text/css", 8));
    CHECK(hearth_web_asset_find("/nope.js") == NULL);
    CHECK(strstr((const char *)html->data, "/app/app.js") != NULL);
    CHECK(strstr((const char *)html->data, "/app/app.css") != NULL);
}

TEST(bytes_match_the_sources) {
    for (size_t i = 0; i < hearth_web_n_assets; i++) {
        const hearth_web_asset *a = &hearth_web_assets[i];
        char path[256];
        snprintf(path, sizeof path, "src/server/web%s", a->path);
        size_t n = 0;
        char *src = golden_slurp(path, &n);
        CHECK(src != NULL);
        if (!src) continue;
        CHECK_EQ(n, a->len);
        CHECK(n == a->len && !memcmp(src, a->data, n));
        CHECK_EQ(a->data[a->len], 0);
        free(src);
    }
}

TEST(small_and_self_contained) {
    size_t total = 0;
    for (size_t i = 0; i < hearth_web_n_assets; i++) {
        const hearth_web_asset *a = &hearth_web_assets[i];
        total += a->len;
        const char *s = (const char *)a->data;
        /* No CDN: nothing is loaded from another origin. */
        CHECK(strstr(s, "src=\"http") == NULL);
        CHECK(strstr(s, "href=\"http") == NULL);
        CHECK(strstr(s, "@import") == NULL);
        CHECK(strstr(s, ".innerHTML") == NULL);
        CHECK(strlen(a->etag) == 18 && a->etag[0] == '"' && a->etag[17] == '"');
        for (size_t j = 0; j < i; j++) CHECK(strcmp(a->etag, hearth_web_assets[j].etag) != 0);
    }
    CHECK(total < 200 * 1024);
    const hearth_web_asset *html = hearth_web_asset_find("/index.html");
    /* The CSP forbids inline script: the page must not need any. */
    if (html) CHECK(strstr((const char *)html->data, "<script>") == NULL);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
