/*
 * test_lora_half.c - adapters kept as f16 (lora/lora.h): an adapter whose tensors are f16 or
 * bf16 is kept and applied in f16, and gives the logits, bit for bit, of the same values
 * written as f32 (which stay f32): the half kernel widens each value exactly and sums as the
 * f32 one does, so any difference is a conversion or storage bug.
 *
 * The adapters are tests/golden/lora/llama-peft's tensors rewritten here (a safetensors file is
 * a JSON header and the raw tensors): f16 against f32 holding the same halves; bf16 against f32
 * holding each bf16 value rounded to f16 (the documented rounding); f32 keeps f32 (bytes twice
 * the f16 copy's). A bf16 value beyond f16's range (65504) is refused naming the layer and
 * projection. Every logit at every position of one prompt on tests/golden/hf/llama, CPU kernels.
 */
#include "lora/lora.h"
#include "model/safetensors.h"
#include "model_harness.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRC "tests/golden/lora/llama-peft/"

enum { N_IDS = 12, N_CTX = 64 };

/* What each f32 value of the source becomes in a rewritten adapter. */
typedef enum { AS_F16, AS_F32_OF_F16, AS_BF16, AS_F32_OF_BF16_F16 } variant;

static size_t elem_size(variant v) { return v == AS_F16 || v == AS_BF16 ? 2 : 4; }

static void put(variant v, uint8_t *p, float f) {
    uint16_t h;
    switch (v) {
    case AS_F16: h = hearth_fp32_to_fp16(f); memcpy(p, &h, 2); return;
    case AS_BF16: h = hearth_fp32_to_bf16(f); memcpy(p, &h, 2); return;
    case AS_F32_OF_F16: f = hearth_fp16_to_fp32(hearth_fp32_to_fp16(f)); break;
    case AS_F32_OF_BF16_F16: f = hearth_fp16_to_fp32(hearth_fp32_to_fp16(hearth_bf16_to_fp32(hearth_fp32_to_bf16(f))));
        break;
    }
    memcpy(p, &f, 4);
}

/* dir/adapter_model.safetensors: every f32 tensor of SRC converted per v (the first value of
 * tensor `poke`, if any, replaced by poke_value first); dir/adapter_config.json copied. */
static bool write_adapter(const char *dir, variant v, const char *poke, float poke_value) {
    hearth_st *st = NULL;
    if (hearth_st_open(SRC "adapter_model.safetensors", &st, NULL)) return false;
    int64_t n = hearth_st_n_tensors(st);
    size_t cap = 1 << 16, len = 0, off = 0, total = 0;
    char *hdr = malloc(cap);
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    for (int64_t i = 0; i < n; i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
        size_t nb = (size_t)t->n_elem * elem_size(v);
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld,%lld],"
                                "\"data_offsets\":[%zu,%zu]}", i ? "," : "", t->name,
                                v == AS_F16 ? "F16" : v == AS_BF16 ? "BF16" : "F32", (long long)t->shape[0],
                                (long long)t->shape[1], off, off + nb);
        off += nb;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    total = off;
    uint8_t *data = malloc(total);
    off = 0;
    bool ok = len < cap;
    for (int64_t i = 0; i < n && ok; i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
        ok = t->dtype == HEARTH_ST_F32 && t->n_dims == 2;
        for (int64_t j = 0; j < t->n_elem && ok; j++) {
            float f;
            memcpy(&f, (const uint8_t *)t->data + 4 * j, 4);
            if (j == 0 && poke && !strcmp(t->name, poke)) f = poke_value;
            put(v, data + off + (size_t)j * elem_size(v), f);
        }
        off += (size_t)t->n_elem * elem_size(v);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    uint64_t hl = len;
    ok = f && fwrite(&hl, 8, 1, f) == 1 && fwrite(hdr, 1, len, f) == len && fwrite(data, 1, total, f) == total;
    if (f) ok = !fclose(f) && ok;
    size_t n_cfg = 0;
    char *cfg = NULL;
    FILE *in = fopen(SRC "adapter_config.json", "rb");
    if (in && ok) {
        cfg = malloc(1 << 16);
        n_cfg = fread(cfg, 1, 1 << 16, in);
    }
    if (in) fclose(in);
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *out = ok && cfg ? fopen(path, "wb") : NULL;
    ok = out && fwrite(cfg, 1, n_cfg, out) == n_cfg;
    if (out) ok = !fclose(out) && ok;
    free(cfg), free(hdr), free(data);
    hearth_st_close(st);
    return ok;
}

static void remove_adapter(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* Load the adapter written per v and run the prompt with it: logits [N_IDS][n_vocab] (malloc'd),
 * the adapter's bytes and whether every adapted projection is kept as f16 in *bytes, *half. */
static float *logits_with(harness *h, variant v, size_t *bytes, bool *half) {
    char dir[] = "/tmp/hearth_lora_half_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_adapter(dir, v, NULL, 0));
    hearth_lora *a = NULL;
    hearth_err err = {0};
    hearth_status st = hearth_lora_load(dir, h->m, &a, &err);
    if (st) fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ(st, HEARTH_OK);
    remove_adapter(dir);
    if (!a) return NULL;
    *bytes = a->bytes;
    *half = true;
    int n_mats = 0;
    for (int32_t il = 0; il < a->n_layer; il++)
        for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++)
            if (a->mats[il][mod].r) *half = *half && a->mats[il][mod].half, n_mats++;
    CHECK(n_mats > 0);
    const hearth_lora *ls[N_IDS];
    for (int32_t i = 0; i < N_IDS; i++) {
        h->tok[i] = (i * 37 + 5) % h->n_vocab;
        h->pos[i] = i;
        h->seq[i] = 0;
        h->want[i] = 1;
        ls[i] = a;
    }
    float *out = malloc((size_t)N_IDS * (size_t)h->n_vocab * sizeof(float));
    hearth_batch b = {.n_tokens = N_IDS, .token = h->tok, .pos = h->pos, .seq = h->seq, .want_logits = h->want,
                      .lora = ls};
    CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), out), HEARTH_OK);
    hearth_lora_release(a);
    return out;
}

static void check_pair(variant half_v, variant f32_v) {
    harness *h = harness_open("tests/golden/hf/llama", N_IDS, N_CTX, false, 2);
    CHECK(h != NULL);
    if (!h) return;
    size_t b16 = 0, b32 = 0;
    bool h16 = false, h32 = true;
    float *l16 = logits_with(h, half_v, &b16, &h16), *l32 = logits_with(h, f32_v, &b32, &h32);
    float *base = malloc((size_t)N_IDS * (size_t)h->n_vocab * sizeof(float));
    CHECK_EQ(harness_run(h, h->tok, N_IDS, 0, true, base), HEARTH_OK);
    size_t n = (size_t)N_IDS * (size_t)h->n_vocab * sizeof(float);
    CHECK(l16 && l32);
    CHECK(h16 && !h32);
    CHECK_EQ(b32, 2 * b16);
    if (l16 && l32) {
        CHECK(memcmp(l16, base, n) != 0); /* the adapter changes the logits */
        CHECK(!memcmp(l16, l32, n));
    }
    free(l16), free(l32), free(base);
    harness_close(h);
}

TEST(f16_adapter_equals_f32_of_its_values) { check_pair(AS_F16, AS_F32_OF_F16); }
TEST(bf16_adapter_is_rounded_to_f16) { check_pair(AS_BF16, AS_F32_OF_BF16_F16); }

TEST(bf16_beyond_f16_range_refused) {
    harness *h = harness_open("tests/golden/hf/llama", N_IDS, N_CTX, false, 1);
    CHECK(h != NULL);
    if (!h) return;
    char dir[] = "/tmp/hearth_lora_half_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_adapter(dir, AS_BF16, "base_model.model.model.layers.1.mlp.up_proj.lora_B.weight", 1e5f));
    hearth_lora *a = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_lora_load(dir, h->m, &a, &err), HEARTH_E_UNSUPPORTED);
    fprintf(stderr, "  %s\n", err.msg);
    CHECK(a == NULL);
    CHECK(strstr(err.msg, "layer 1's up_proj") != NULL && strstr(err.msg, "65504") != NULL);
    remove_adapter(dir);
    harness_close(h);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
