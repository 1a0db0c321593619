/*
 * golden_read.h - read the llama.cpp golden files of tests/golden/llamacpp/ (header-only).
 *
 * tools/golden_llamacpp.py writes one NAME.golden per starter model: the prompts and their
 * llama.cpp token ids, a greedy continuation with the logits of every step, and teacher-forced
 * logits over tests/golden/llamacpp/text_en.txt. The format (little-endian, version 1) is
 * documented in that script and in tests/golden/llamacpp/README.md:
 *
 *   header (128 bytes) | prompt table P x 16 | prompt tokens N x i32 | gen tokens P*G x i32 |
 *   step records P*G x R | [full step-0 logits P*V x f16] | text tokens T x i32 |
 *   text records T x R | prompt bytes B
 *
 *   R = f32 lse, then K x (i32 id, f32 logit), highest logit first (lower id first on ties).
 *
 * golden_open() reads the whole file, checks the magic, version, counts and that the file size
 * is exactly what the counts imply, and decodes it into host arrays, so tests index plain C
 * arrays: g.step[ip * g.n_gen + s], g.text[t], g.full_logits[ip * g.n_vocab + v]. The reader
 * is deliberately independent of hearth's own code (its own f16 conversion, plain stdio): it is
 * the reference side of a comparison.
 *
 * Test code only: it allocates with malloc and reports errors through a caller buffer.
 */
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_MAGIC        "HRTHGOLD"
#define GOLDEN_VERSION      1u
#define GOLDEN_HEADER_BYTES 128u
#define GOLDEN_MAX_K        64
#define GOLDEN_FLAG_FULL    1u /* full f16 logits of step 0 of every prompt are present */
#define GOLDEN_FLAG_BOS     2u /* the tokenizer added BOS (tokenizer.ggml.add_bos_token) */

/* One position's logits as llama.cpp computed them. */
typedef struct {
    float   lse;                  /* log(sum(exp(logit))) over the whole vocabulary */
    int32_t id[GOLDEN_MAX_K];     /* top_k token ids, highest logit first */
    float   logit[GOLDEN_MAX_K];  /* their logits */
} golden_logits;

typedef struct {
    uint32_t    n_tokens;
    int32_t    *tokens;           /* borrowed: golden_file.prompt_tokens */
    uint32_t    n_bytes;
    char       *text;             /* owned by golden_file (NUL-terminated copy) */
} golden_prompt;

typedef struct {
    uint32_t       version, n_vocab, top_k, n_prompts, n_gen, n_text, flags;
    uint32_t       n_prompt_tokens, n_prompt_bytes;
    uint8_t        model_sha256[32];
    golden_prompt *prompt;        /* owned: [n_prompts] */
    int32_t       *prompt_tokens; /* owned: [n_prompt_tokens] */
    int32_t       *gen;           /* owned: [n_prompts * n_gen], gen[ip*n_gen+s] */
    golden_logits *step;          /* owned: [n_prompts * n_gen], the logits that chose gen[] */
    float         *full_logits;   /* owned: [n_prompts * n_vocab] or NULL (flags bit 0) */
    int32_t       *text_tokens;   /* owned: [n_text] */
    golden_logits *text;          /* owned: [n_text], text[t] = logits at position t */
    char          *text_bytes;    /* owned: all prompt texts, each NUL-terminated */
} golden_file;

static inline uint32_t golden_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline float golden_f32(const unsigned char *p) {
    uint32_t u = golden_u32(p);
    float    f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16 -> binary32, exact for every input (subnormals, inf, NaN). */
static inline float golden_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0 && man == 0) {
        bits = sign;
    } else if (exp == 0) { /* subnormal: man * 2^-24; shift the leading 1 up to bit 10 */
        uint32_t shifts = 0;
        while (!(man & 0x400u)) { man <<= 1; shifts++; }
        bits = sign | (127u - 14u - shifts) << 23 | (man & 0x3ffu) << 13;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127u - 15u) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline void golden_close(golden_file *g) {
    if (!g) return;
    free(g->prompt);
    free(g->prompt_tokens);
    free(g->gen);
    free(g->step);
    free(g->full_logits);
    free(g->text_tokens);
    free(g->text);
    free(g->text_bytes);
    memset(g, 0, sizeof *g);
}

static inline void golden_decode_record(const unsigned char *p, uint32_t k, golden_logits *r) {
    memset(r, 0, sizeof *r);
    r->lse = golden_f32(p);
    for (uint32_t i = 0; i < k; i++) {
        r->id[i]    = (int32_t)golden_u32(p + 4 + 8 * (size_t)i);
        r->logit[i] = golden_f32(p + 8 + 8 * (size_t)i);
    }
}

/* Read and check the golden file at path into *g. Returns 0, or -1 with a message in err
 * (err may be NULL) and *g zeroed. Release with golden_close(). */
static inline int golden_open(golden_file *g, const char *path, char *err, size_t err_len) {
    unsigned char *buf = NULL;
    long           n_file = -1;
    const char    *why = NULL;
    char           tmp[64];
    memset(g, 0, sizeof *g);

    FILE *f = fopen(path, "rb");
    if (!f) { why = "cannot open"; goto fail; }
    if (fseek(f, 0, SEEK_END) == 0) n_file = ftell(f);
    if (n_file < (long)GOLDEN_HEADER_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        why = "too short for a header"; goto fail;
    }
    buf = malloc((size_t)n_file);
    if (!buf || fread(buf, 1, (size_t)n_file, f) != (size_t)n_file) { why = "read failed"; goto fail; }
    fclose(f);
    f = NULL;

    if (memcmp(buf, GOLDEN_MAGIC, 8) != 0) { why = "bad magic"; goto fail; }
    g->version = golden_u32(buf + 8);
    if (g->version != GOLDEN_VERSION || golden_u32(buf + 12) != GOLDEN_HEADER_BYTES) {
        why = "unsupported version or header size"; goto fail;
    }
    g->n_vocab         = golden_u32(buf + 16);
    g->top_k           = golden_u32(buf + 20);
    g->n_prompts       = golden_u32(buf + 24);
    g->n_gen           = golden_u32(buf + 28);
    g->n_text          = golden_u32(buf + 32);
    g->n_prompt_tokens = golden_u32(buf + 36);
    g->n_prompt_bytes  = golden_u32(buf + 40);
    g->flags           = golden_u32(buf + 44);
    memcpy(g->model_sha256, buf + 48, 32);
    if (g->n_vocab == 0 || g->n_vocab > (1u << 24) || g->top_k == 0 || g->top_k > GOLDEN_MAX_K ||
        g->top_k > g->n_vocab || g->n_prompts > 4096 || g->n_gen > 4096 || g->n_text > (1u << 20) ||
        g->n_prompt_tokens > (1u << 24) || g->n_prompt_bytes > (1u << 26) || (g->flags & ~3u)) {
        why = "counts out of range"; goto fail;
    }

    /* Every count is bounded above, so these 64-bit sums cannot overflow. */
    uint64_t rec   = 4 + 8 * (uint64_t)g->top_k;
    uint64_t n_pg  = (uint64_t)g->n_prompts * g->n_gen;
    uint64_t o_tab = GOLDEN_HEADER_BYTES;
    uint64_t o_ptk = o_tab + 16 * (uint64_t)g->n_prompts;
    uint64_t o_gen = o_ptk + 4 * (uint64_t)g->n_prompt_tokens;
    uint64_t o_stp = o_gen + 4 * n_pg;
    uint64_t o_ful = o_stp + rec * n_pg;
    uint64_t o_ttk = o_ful + ((g->flags & GOLDEN_FLAG_FULL) ? 2 * (uint64_t)g->n_prompts * g->n_vocab : 0);
    uint64_t o_trc = o_ttk + 4 * (uint64_t)g->n_text;
    uint64_t o_byt = o_trc + rec * g->n_text;
    uint64_t end   = o_byt + g->n_prompt_bytes;
    if (end != (uint64_t)n_file) {
        snprintf(tmp, sizeof tmp, "size %ld, the counts say %llu", n_file, (unsigned long long)end);
        why = tmp; goto fail;
    }

    g->prompt        = calloc(g->n_prompts ? g->n_prompts : 1, sizeof *g->prompt);
    g->prompt_tokens = calloc(g->n_prompt_tokens ? g->n_prompt_tokens : 1, sizeof(int32_t));
    g->gen           = calloc(n_pg ? n_pg : 1, sizeof(int32_t));
    g->step          = calloc(n_pg ? n_pg : 1, sizeof(golden_logits));
    g->text_tokens   = calloc(g->n_text ? g->n_text : 1, sizeof(int32_t));
    g->text          = calloc(g->n_text ? g->n_text : 1, sizeof(golden_logits));
    g->text_bytes    = calloc((size_t)g->n_prompt_bytes + g->n_prompts + 1, 1);
    if (g->flags & GOLDEN_FLAG_FULL)
        g->full_logits = calloc((size_t)g->n_prompts * g->n_vocab, sizeof(float));
    if (!g->prompt || !g->prompt_tokens || !g->gen || !g->step || !g->text_tokens || !g->text ||
        !g->text_bytes || ((g->flags & GOLDEN_FLAG_FULL) && !g->full_logits)) {
        why = "out of memory"; goto fail;
    }

    for (uint32_t i = 0; i < g->n_prompt_tokens; i++)
        g->prompt_tokens[i] = (int32_t)golden_u32(buf + o_ptk + 4 * (uint64_t)i);
    char *dst = g->text_bytes;
    for (uint32_t ip = 0; ip < g->n_prompts; ip++) {
        const unsigned char *e = buf + o_tab + 16 * (uint64_t)ip;
        uint32_t nt = golden_u32(e), ft = golden_u32(e + 4), nb = golden_u32(e + 8), fb = golden_u32(e + 12);
        if ((uint64_t)ft + nt > g->n_prompt_tokens || (uint64_t)fb + nb > g->n_prompt_bytes) {
            why = "prompt table points outside its pools"; goto fail;
        }
        g->prompt[ip].n_tokens = nt;
        g->prompt[ip].tokens   = g->prompt_tokens + ft;
        g->prompt[ip].n_bytes  = nb;
        g->prompt[ip].text     = dst;
        memcpy(dst, buf + o_byt + fb, nb);
        dst += nb + 1; /* the calloc'd byte after each text is its NUL */
    }
    for (uint64_t i = 0; i < n_pg; i++) {
        g->gen[i] = (int32_t)golden_u32(buf + o_gen + 4 * i);
        golden_decode_record(buf + o_stp + rec * i, g->top_k, &g->step[i]);
    }
    if (g->full_logits) {
        for (uint64_t i = 0; i < (uint64_t)g->n_prompts * g->n_vocab; i++) {
            const unsigned char *p = buf + o_ful + 2 * i;
            g->full_logits[i] = golden_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
        }
    }
    for (uint32_t t = 0; t < g->n_text; t++) {
        g->text_tokens[t] = (int32_t)golden_u32(buf + o_ttk + 4 * (uint64_t)t);
        golden_decode_record(buf + o_trc + rec * t, g->top_k, &g->text[t]);
    }
    free(buf);
    return 0;

fail:
    if (err && err_len) snprintf(err, err_len, "%s: %s", path, why ? why : "error");
    if (f) fclose(f);
    free(buf);
    golden_close(g);
    return -1;
}
