/* test_server_chat_plain.c - --no-special-in-content's marks (server/chat_plain.h): which
 * messages are marked, whitespace kept outside the marks, the marks cut out again with the
 * ranges they enclosed, malformed pairs refused, and ranges clipped at a cut. */
#include "server/chat_plain.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static char *content_of(cJSON *ctx, int i) {
    cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ctx, "messages"), i);
    return cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
}

TEST(marks_user_and_tool_text_only) {
    hearth_plain_marks m;
    hearth_plain_marks_init(&m, "n0nce");
    cJSON *ctx = cJSON_Parse("{\"messages\":[{\"role\":\"system\",\"content\":\"<|s|>\"},"
                             "{\"role\":\"user\",\"content\":\"  a<|x|>b \\n\"},"
                             "{\"role\":\"assistant\",\"content\":\"<|y|>\"},"
                             "{\"role\":\"tool\",\"content\":\"t\"},{\"role\":\"user\",\"content\":\"\"}]}");
    hearth_api_err e;
    CHECK(ctx && hearth_plain_mark(&m, ctx, &e));
    CHECK_STR(content_of(ctx, 0), "<|s|>");
    CHECK_STR(content_of(ctx, 2), "<|y|>");
    CHECK_STR(content_of(ctx, 4), "");
    char want[128];
    snprintf(want, sizeof want, "  %sa<|x|>b%s \n", m.open, m.close);
    CHECK_STR(content_of(ctx, 1), want);
    snprintf(want, sizeof want, "%st%s", m.open, m.close);
    CHECK_STR(content_of(ctx, 3), want);

    /* a rendered prompt: the marks come out, the ranges cover the user's and the tool's text */
    char text[512];
    snprintf(text, sizeof text, "<|s|>%s<|e|>%s%s", content_of(ctx, 1), content_of(ctx, 3), "<|g|>");
    size_t n = strlen(text), *r = NULL, nr = 0;
    CHECK(hearth_plain_strip(&m, text, &n, &r, &nr, &e));
    CHECK_STR(text, "<|s|>  a<|x|>b \n<|e|>t<|g|>");
    CHECK_EQ(n, strlen(text));
    CHECK_EQ(nr, 2);
    if (nr == 2) {
        CHECK_EQ(r[0], 7); /* "a<|x|>b" */
        CHECK_EQ(r[1], 14);
        CHECK_EQ(r[2], 21); /* "t" */
        CHECK_EQ(r[3], 22);
    }
    /* a cut inside the second range clips it, one before it drops it */
    hearth_plain_clip(r, &nr, 10);
    CHECK_EQ(nr, 1);
    CHECK_EQ(r[1], 10);
    hearth_plain_clip(r, &nr, 7);
    CHECK_EQ(nr, 0);
    free(r);
    cJSON_Delete(ctx);
}

TEST(malformed_pairs_are_refused) {
    hearth_plain_marks m;
    hearth_plain_marks_init(&m, "k");
    char bad[4][256];
    snprintf(bad[0], sizeof bad[0], "%sa", m.open);                 /* never closed */
    snprintf(bad[1], sizeof bad[1], "a%s", m.close);                /* closed, never opened */
    snprintf(bad[2], sizeof bad[2], "%sa%sb%s", m.open, m.open, m.close); /* nested */
    snprintf(bad[3], sizeof bad[3], "%s%sa%s", m.close, m.open, m.close);
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(bad[i]), *r = (size_t *)1, nr = 9;
        hearth_api_err e;
        CHECK(!hearth_plain_strip(&m, bad[i], &n, &r, &nr, &e));
        CHECK_EQ(hearth_api_err_http(&e), 400);
        CHECK(strstr(e.msg, "--no-special-in-content") != NULL);
    }
    /* text without marks, and a private-use character that is not a mark, pass unchanged */
    char ok[] = "a\xEE\x80\x80z b";
    size_t n = strlen(ok), *r = NULL, nr = 0;
    hearth_api_err e;
    CHECK(hearth_plain_strip(&m, ok, &n, &r, &nr, &e));
    CHECK_STR(ok, "a\xEE\x80\x80z b");
    CHECK_EQ(nr, 0);
    free(r);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
