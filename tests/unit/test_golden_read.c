/*
 * test_golden_read.c - the committed llama.cpp goldens read back through tests/golden_read.h.
 *
 * Checks the files themselves (counts, every record sorted with lse >= its max logit, the
 * greedy tokens equal to their step's argmax, the f16 full logits agreeing with the top-k,
 * the model sha256 equal to models/starter.tsv's) and that the reader rejects damaged files.
 * Needs no model: it runs from the repository root like every test binary.
 */
#include "golden_read.h"
#include "test.h"

#include <unistd.h>

#define GOLDEN_DIR "tests/golden/llamacpp/"

/* The sha256 column (6th) of models/starter.tsv's row `name`, as 32 bytes. 0 when found. */
static int manifest_sha(const char *name, uint8_t out[32]) {
    FILE *f = fopen("models/starter.tsv", "r");
    if (!f) return -1;
    char line[4096];
    int  rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *field = line;
        size_t n = strlen(name);
        if (strncmp(line, name, n) != 0 || line[n] != '\t') continue;
        for (int i = 0; i < 5 && field; i++) {
            field = strchr(field, '\t');
            if (field) field++;
        }
        if (!field) break;
        rc = 0;
        for (int i = 0; i < 32; i++) {
            unsigned v;
            if (sscanf(field + 2 * i, "%2x", &v) != 1) { rc = -1; break; }
            out[i] = (uint8_t)v;
        }
    }
    fclose(f);
    return rc;
}

/* A well-formed record: ids in range and distinct, sorted by logit (ties by id), lse >= max
 * and not more than log(n_vocab) above it, everything finite. Returns the number of faults. */
static int record_faults(const golden_file *g, const golden_logits *r) {
    int bad = 0;
    if (!isfinite(r->lse) || r->lse < r->logit[0]) bad++;
    if (r->lse > r->logit[0] + logf((float)g->n_vocab) + 1e-3f) bad++;
    for (uint32_t i = 0; i < g->top_k; i++) {
        if (r->id[i] < 0 || (uint32_t)r->id[i] >= g->n_vocab || !isfinite(r->logit[i])) bad++;
        if (i > 0 && (r->logit[i] > r->logit[i - 1] ||
                      (r->logit[i] == r->logit[i - 1] && r->id[i] <= r->id[i - 1])))
            bad++;
        for (uint32_t j = 0; j < i; j++) bad += r->id[j] == r->id[i];
    }
    return bad;
}

static int tokens_in_range(const golden_file *g, const int32_t *t, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (t[i] < 0 || (uint32_t)t[i] >= g->n_vocab) return 0;
    return 1;
}

/* name: the golden's file stem (NAME or NAME.<kv>); its model is the starter row before the dot */
static void check_golden(const char *name, uint32_t n_vocab, uint32_t flags) {
    char path[256], err[512], model[64];
    snprintf(path, sizeof path, GOLDEN_DIR "%s.golden", name);
    snprintf(model, sizeof model, "%.*s", (int)strcspn(name, "."), name);
    golden_file g;
    int rc = golden_open(&g, path, err, sizeof err);
    if (rc) fprintf(stderr, "  %s\n", err);
    CHECK_EQ(rc, 0);
    if (rc) return;

    CHECK_EQ(g.version, 1);
    CHECK_EQ(g.n_vocab, n_vocab);
    CHECK_EQ(g.top_k, 64);
    CHECK_EQ(g.n_prompts, 8);
    CHECK_EQ(g.n_gen, 64);
    CHECK(g.n_text >= 512);
    CHECK_EQ(g.flags, flags);
    uint8_t sha[32];
    CHECK_EQ(manifest_sha(model, sha), 0);
    CHECK(memcmp(sha, g.model_sha256, 32) == 0);

    int faults = 0, argmax_mismatch = 0, total_tokens = 0;
    for (uint32_t ip = 0; ip < g.n_prompts; ip++) {
        const golden_prompt *p = &g.prompt[ip];
        CHECK(p->n_tokens > 0 && p->n_tokens + g.n_gen <= 1024);
        CHECK(p->n_bytes > 0 && strlen(p->text) == p->n_bytes);
        CHECK(tokens_in_range(&g, p->tokens, p->n_tokens));
        total_tokens += (int)p->n_tokens;
        CHECK(tokens_in_range(&g, g.gen + ip * g.n_gen, g.n_gen));
        for (uint32_t s = 0; s < g.n_gen; s++) {
            const golden_logits *r = &g.step[ip * g.n_gen + s];
            faults += record_faults(&g, r);
            argmax_mismatch += g.gen[ip * g.n_gen + s] != r->id[0];
        }
    }
    CHECK_EQ(total_tokens, g.n_prompt_tokens);
    CHECK_EQ(faults, 0);
    CHECK_EQ(argmax_mismatch, 0);

    CHECK(tokens_in_range(&g, g.text_tokens, g.n_text));
    faults = 0;
    for (uint32_t t = 0; t < g.n_text; t++) faults += record_faults(&g, &g.text[t]);
    CHECK_EQ(faults, 0);

    /* The full f16 logits round the same numbers the top-k holds: each top-k logit is within
     * half an f16 ulp (2^-11 relative) of its f16 copy, the largest f16 logit is the top-1
     * logit within the same bound, and their logsumexp matches lse. */
    CHECK_EQ(g.full_logits != NULL, (flags & GOLDEN_FLAG_FULL) != 0);
    for (uint32_t ip = 0; g.full_logits && ip < g.n_prompts; ip++) {
        const float         *x = g.full_logits + (size_t)ip * g.n_vocab;
        const golden_logits *r = &g.step[ip * g.n_gen];
        int far = 0;
        for (uint32_t i = 0; i < g.top_k; i++)
            far += fabsf(x[r->id[i]] - r->logit[i]) > fabsf(r->logit[i]) * 0x1p-11f + 1e-6f;
        CHECK_EQ(far, 0);
        double m = x[0], sum = 0;
        for (uint32_t v = 1; v < g.n_vocab; v++) m = x[v] > m ? x[v] : m;
        CHECK_NEAR(m, r->logit[0], fabsf(r->logit[0]) * 0x1p-11f + 1e-6);
        for (uint32_t v = 0; v < g.n_vocab; v++) sum += exp(x[v] - m);
        CHECK_NEAR(m + log(sum), r->lse, 0.03);
    }
    golden_close(&g);
}

TEST(smollm2_golden) { check_golden("smollm2", 49152, GOLDEN_FLAG_FULL); }

TEST(gemma3_golden) { check_golden("gemma3", 262144, GOLDEN_FLAG_BOS); }

TEST(smollm2_q8_0_golden) { check_golden("smollm2.q8_0", 49152, GOLDEN_FLAG_FULL); }

TEST(gemma3_q8_0_golden) { check_golden("gemma3.q8_0", 262144, GOLDEN_FLAG_BOS); }

TEST(f16_conversion) {
    CHECK_EQ(golden_f16_to_f32(0x0000), 0.0f);
    CHECK_EQ(golden_f16_to_f32(0x3c00), 1.0f);
    CHECK_EQ(golden_f16_to_f32(0xc000), -2.0f);
    CHECK_EQ(golden_f16_to_f32(0x7bff), 65504.0f);
    CHECK(golden_f16_to_f32(0x0001) == 0x1p-24f);  /* smallest subnormal */
    CHECK(golden_f16_to_f32(0x03ff) == 0x3ffp-24f); /* largest subnormal */
    CHECK(golden_f16_to_f32(0x0400) == 0x1p-14f);  /* smallest normal */
    CHECK(isinf(golden_f16_to_f32(0xfc00)) && golden_f16_to_f32(0xfc00) < 0);
    CHECK(isnan(golden_f16_to_f32(0x7e00)));
}

/* Write the first n bytes of src (then `extra` zero bytes) to a temp file; returns its path. */
static int write_damaged(const char *src, long n, int extra, int flip_magic, char *out, size_t len) {
    FILE *in = fopen(src, "rb");
    if (!in) return -1;
    snprintf(out, len, "/tmp/hearth_golden_XXXXXX");
    int fd = mkstemp(out);
    FILE *o = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o) { fclose(in); return -1; }
    for (long i = 0; i < n; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(i == 0 && flip_magic ? c ^ 1 : c, o);
    }
    for (int i = 0; i < extra; i++) fputc(0, o);
    fclose(in);
    return fclose(o);
}

TEST(rejects_damaged_files) {
    const char *src = GOLDEN_DIR "gemma3.golden";
    char path[64], err[512];
    golden_file g;
    CHECK(golden_open(&g, "tests/golden/llamacpp/no-such.golden", err, sizeof err) != 0);
    CHECK(strstr(err, "cannot open") != NULL);

    struct { long n; int extra, flip; const char *why; } cases[] = {
        {100, 0, 0, "too short"},             /* shorter than the header */
        {5000, 0, 0, "the counts say"},       /* truncated body */
        {1L << 30, 1, 0, "the counts say"},   /* one byte too many */
        {1L << 30, 0, 1, "bad magic"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ(write_damaged(src, cases[i].n, cases[i].extra, cases[i].flip, path, sizeof path), 0);
        err[0] = 0;
        CHECK(golden_open(&g, path, err, sizeof err) != 0);
        if (!strstr(err, cases[i].why)) fprintf(stderr, "  case %zu: %s\n", i, err);
        CHECK(strstr(err, cases[i].why) != NULL);
        CHECK(g.step == NULL && g.prompt == NULL);
        unlink(path);
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
