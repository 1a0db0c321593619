/* test_server_stop.c - the stop-string matcher: hold-back across pieces, earliest match, the
 * stop text excluded, flush, and a randomized check against the obvious whole-text answer. */
#include "server/json_out.h"
#include "server/stop.h"
#include "test.h"

static hearth_span sp(const char *s) { return hearth_span_cstr(s); }

/* Push pieces through a matcher; the released text goes to out. Returns whether it stopped. */
static bool run(const char *const *stops, int n_stops, const char *const *pieces, int n, char *out, size_t cap) {
    hearth_span ss[HEARTH_STOP_MAX];
    for (int i = 0; i < n_stops; i++) ss[i] = sp(stops[i]);
    hearth_stop m;
    if (hearth_stop_init(&m, ss, n_stops)) return false;
    size_t len = 0;
    bool stopped = false;
    out[0] = 0;
    for (int i = 0; i < n && !stopped; i++) {
        hearth_span r;
        stopped = hearth_stop_push(&m, pieces[i], strlen(pieces[i]), &r);
        if (len + r.len < cap) memcpy(out + len, r.ptr, r.len), len += r.len;
    }
    if (!stopped) {
        hearth_span r = hearth_stop_flush(&m);
        if (len + r.len < cap) memcpy(out + len, r.ptr, r.len), len += r.len;
    }
    out[len] = 0;
    hearth_stop_fini(&m);
    return stopped;
}

TEST(stop_passthrough_without_stops) {
    hearth_stop m;
    CHECK_EQ(hearth_stop_init(&m, NULL, 0), HEARTH_OK);
    hearth_span r;
    const char *t = "hello";
    CHECK(!hearth_stop_push(&m, t, 5, &r));
    CHECK(r.ptr == t && r.len == 5);
    CHECK_EQ(hearth_stop_flush(&m).len, 0);
    hearth_stop_fini(&m);
}

TEST(stop_across_pieces) {
    char out[256];
    const char *stops[] = {"o w"};
    const char *pieces[] = {"Hel", "lo", " wor", "ld"};
    CHECK(run(stops, 1, pieces, 4, out, sizeof out));
    CHECK_STR(out, "Hell");
    const char *stops2[] = {"xyz"};
    CHECK(!run(stops2, 1, pieces, 4, out, sizeof out));
    CHECK_STR(out, "Hello world");
    const char *stops3[] = {"ld"}; /* the stop is the very end */
    CHECK(run(stops3, 1, pieces, 4, out, sizeof out));
    CHECK_STR(out, "Hello wor");
    const char *stops4[] = {"Hel"}; /* at the very start */
    CHECK(run(stops4, 1, pieces, 4, out, sizeof out));
    CHECK_STR(out, "");
}

/* Tokens that decode to nothing (a control token, half a character) push empty pieces, also
 * before any text: the matcher then holds nothing yet (found by fuzz_chat under UBSan). */
TEST(stop_empty_pieces_before_any_text) {
    char out[256];
    const char *stops[] = {"o w"};
    const char *pieces[] = {"", "", "Hello", "", " world"};
    CHECK(run(stops, 1, pieces, 5, out, sizeof out));
    CHECK_STR(out, "Hell");
    const char *stops2[] = {"xyz"};
    CHECK(!run(stops2, 1, pieces, 5, out, sizeof out));
    CHECK_STR(out, "Hello world");
    const char *empty[] = {"", ""};
    CHECK(!run(stops, 1, empty, 2, out, sizeof out));
    CHECK_STR(out, "");
}

TEST(stop_reports_which_string_matched) {
    /* "b c" completes first (ends earliest) though "a b c d" began earlier; the empty string
     * is skipped, so hit indexes the non-empty strings in order */
    hearth_span ss[] = {sp("a b c d"), sp(""), sp("b c"), sp("zz")};
    hearth_stop m;
    CHECK_EQ(hearth_stop_init(&m, ss, 4), HEARTH_OK);
    CHECK_EQ(m.hit, -1);
    hearth_span r;
    CHECK(!hearth_stop_push(&m, "x a b", 5, &r));
    CHECK(r.len == 2 && !memcmp(r.ptr, "x ", 2)); /* "a b" may begin a stop string: held */
    CHECK_EQ(m.hit, -1);
    CHECK(hearth_stop_push(&m, " c d", 4, &r));
    CHECK_EQ(m.hit, 1);
    CHECK(hearth_span_eq(m.stops[m.hit], "b c"));
    CHECK(r.len == 2 && !memcmp(r.ptr, "a ", 2));
    hearth_stop_fini(&m);
}

TEST(stop_holds_back_only_prefixes) {
    hearth_span ss[] = {sp("END")};
    hearth_stop m;
    hearth_stop_init(&m, ss, 1);
    hearth_span r;
    CHECK(!hearth_stop_push(&m, "abc E", 5, &r));
    CHECK_EQ(r.len, 4); /* "abc " released, "E" held */
    CHECK(!hearth_stop_push(&m, "N", 1, &r));
    CHECK_EQ(r.len, 0); /* "EN" held */
    CHECK(!hearth_stop_push(&m, "x", 1, &r));
    CHECK_EQ(r.len, 3); /* "ENx" can no longer start END */
    CHECK(!memcmp(r.ptr, "ENx", 3));
    CHECK(hearth_stop_push(&m, "yEND tail", 9, &r));
    CHECK_EQ(r.len, 1);
    CHECK(hearth_stop_push(&m, "more", 4, &r)); /* stays stopped */
    CHECK_EQ(r.len, 0);
    hearth_stop_fini(&m);
}

TEST(stop_earliest_and_overlapping) {
    char out[256];
    const char *stops[] = {"cd", "bcx", "b"};
    const char *pieces[] = {"a", "bcd"};
    CHECK(run(stops, 3, pieces, 2, out, sizeof out));
    CHECK_STR(out, "a");
    const char *stops1[] = {"abcd", "c"}; /* "c" completes first, though "abcd" starts earlier */
    const char *pieces1[] = {"xabcd"};
    const char *pieces1b[] = {"xa", "b", "cd"};
    CHECK(run(stops1, 2, pieces1, 1, out, sizeof out));
    CHECK_STR(out, "xab");
    CHECK(run(stops1, 2, pieces1b, 3, out, sizeof out));
    CHECK_STR(out, "xab");
    const char *stops2[] = {"aab"};
    const char *pieces2[] = {"a", "a", "a", "b", "c"};
    CHECK(run(stops2, 1, pieces2, 5, out, sizeof out));
    CHECK_STR(out, "a");
    const char *stops3[] = {"", "q"}; /* empty strings are ignored */
    const char *pieces3[] = {"xy", "z"};
    CHECK(!run(stops3, 2, pieces3, 2, out, sizeof out));
    CHECK_STR(out, "xyz");
}

TEST(stop_limits) {
    hearth_span ss[HEARTH_STOP_MAX + 1];
    for (int i = 0; i <= HEARTH_STOP_MAX; i++) ss[i] = sp("x");
    hearth_stop m;
    CHECK_EQ(hearth_stop_init(&m, ss, HEARTH_STOP_MAX + 1), HEARTH_E_LIMIT);
    static char big[HEARTH_STOP_MAX_BYTES + 2];
    memset(big, 'a', sizeof big - 1);
    ss[0] = sp(big);
    CHECK_EQ(hearth_stop_init(&m, ss, 1), HEARTH_E_LIMIT);
}

static uint64_t rng_state = 0x12345678;
static uint32_t rnd(uint32_t n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

/* Random texts of 1-3 byte characters, random stops drawn from the text or not, random whole-
 * character pieces: the released text ends where the first stop completes (or is all of it), every
 * release is valid
 * UTF-8, and nothing past a stop is released. */
TEST(stop_randomized_against_reference) {
    static const char *const alphabet[] = {"a", "b", " ", "\xc3\xa9", "\xe2\x82\xac", "\xe4\xb8\xad"};
    for (int iter = 0; iter < 3000; iter++) {
        char text[256] = "";
        size_t n = 0;
        int n_chars = 1 + (int)rnd(40);
        size_t starts[64];
        int n_starts = 0;
        for (int i = 0; i < n_chars; i++) {
            const char *c = alphabet[rnd(6)];
            starts[n_starts++] = n;
            memcpy(text + n, c, strlen(c));
            n += strlen(c);
        }
        starts[n_starts] = n;
        text[n] = 0;
        char stopbuf[3][32];
        hearth_span ss[3];
        int n_stops = 1 + (int)rnd(3);
        for (int k = 0; k < n_stops; k++) {
            if (rnd(2)) { /* a substring of the text on character boundaries */
                int a = (int)rnd((uint32_t)n_starts), b = a + 1 + (int)rnd(3);
                if (b > n_starts) b = n_starts;
                size_t len = starts[b] - starts[a];
                memcpy(stopbuf[k], text + starts[a], len);
                stopbuf[k][len] = 0;
            } else {
                snprintf(stopbuf[k], sizeof stopbuf[k], "%s%s", alphabet[rnd(6)], alphabet[rnd(6)]);
            }
            ss[k] = sp(stopbuf[k]);
        }
        const char *best = NULL, *best_end = NULL; /* the first stop string to complete */
        for (int k = 0; k < n_stops; k++) {
            const char *h = strstr(text, stopbuf[k]);
            if (!h) continue;
            const char *e = h + strlen(stopbuf[k]);
            if (!best || e < best_end || (e == best_end && h < best)) best = h, best_end = e;
        }
        size_t want = best ? (size_t)(best - text) : n;
        hearth_stop m;
        hearth_stop_init(&m, ss, n_stops);
        char got[256];
        size_t n_got = 0;
        bool stopped = false, utf8_ok = true;
        for (int i = 0; i < n_chars && !stopped;) {
            int j = i + 1 + (int)rnd(4);
            if (j > n_chars) j = n_chars;
            hearth_span r;
            stopped = hearth_stop_push(&m, text + starts[i], starts[j] - starts[i], &r);
            utf8_ok &= hearth_utf8_valid(r.ptr, r.len, NULL);
            memcpy(got + n_got, r.ptr, r.len);
            n_got += r.len;
            i = j;
        }
        if (!stopped) {
            hearth_span r = hearth_stop_flush(&m);
            utf8_ok &= hearth_utf8_valid(r.ptr, r.len, NULL);
            memcpy(got + n_got, r.ptr, r.len);
            n_got += r.len;
        }
        hearth_stop_fini(&m);
        CHECK_EQ(stopped, best != NULL);
        CHECK_EQ(n_got, want);
        CHECK(n_got == want && !memcmp(got, text, want));
        CHECK(utf8_ok);
        if (test_cur_failed) {
            fprintf(stderr, "  text \"%s\" stops \"%s\" \"%s\" \"%s\" (%d) got \"%.*s\"\n", text, stopbuf[0],
                    n_stops > 1 ? stopbuf[1] : "", n_stops > 2 ? stopbuf[2] : "", n_stops, (int)n_got, got);
            break;
        }
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
