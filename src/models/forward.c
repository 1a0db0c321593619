/*
 * forward.c - the forward context (activation scratch sized once for the largest step) and
 * the per-family dispatch with the batch checks that protect the cache.
 */
#include "models/forward_internal.h"
#include "kernels/ref/ops_ref.h"
#include "model/hf_config.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Forget the backend's copies of kept adapter i's matrices, drop the forward's reference. */
static void lora_drop(hearth_fwd *f, int32_t i) {
    const hearth_lora *a = f->lora_kept[i];
    for (int32_t il = 0; il < a->n_layer; il++)
        for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++) {
            const hearth_lora_mat *mt = hearth_lora_get(a, il, (hearth_lora_mod)mod);
            if (!mt->r) continue;
            hearth_backend_forget(f->be, mt->a); /* phi3's shared A: the second call finds nothing */
            hearth_backend_forget(f->be, mt->b);
        }
    hearth_lora_release(a);
    f->lora_kept[i] = f->lora_kept[--f->n_lora_kept];
}

void hearth_fwd_lora_sweep(hearth_fwd *f) {
    for (int32_t i = 0; i < f->n_lora_kept;)
        if (hearth_lora_sole_ref(f->lora_kept[i])) lora_drop(f, i);
        else i++;
}

hearth_fwd *hearth_fwd_create(const hearth_model *m, hearth_backend *be, int32_t max_tok, const hearth_numerics *nx) {
    const hearth_hparams *hp = &m->hp;
    hearth_fwd *f = calloc(1, sizeof *f);
    if (!f || max_tok <= 0) {
        free(f);
        return NULL;
    }
    f->m = m;
    f->be = be;
    f->max_tok = max_tok;
    size_t T = (size_t)max_tok, E = (size_t)hp->n_embd;
    size_t qw = (size_t)hp->n_head * (size_t)hp->head_dim, kw = (size_t)hp->n_head_kv * (size_t)hp->head_dim,
           vw = (size_t)hp->n_head_kv * (size_t)hp->head_dim_v, aw = (size_t)hp->n_head * (size_t)hp->head_dim_v;
    size_t LP = (size_t)hp->n_layer * (size_t)hp->n_embd_ple, P = (size_t)hp->n_embd_ple;
    bool moe = hp->n_expert > 0;
    size_t ME = moe ? T * E : 0, MI = moe ? T * (size_t)hp->n_ff_exp : 0, MX = T * (size_t)hp->n_expert;
    size_t AB = T * (size_t)hp->n_embd_backbone, AC = T * (size_t)hp->n_centroids; /* an assistant */
    size_t FF = (size_t)(hp->n_ff > hp->n_ff_shexp ? hp->n_ff : hp->n_ff_shexp); /* a shared expert may be wider */
    size_t LV = (size_t)hp->lin_n_v * (size_t)hp->lin_v_dim, LC = 2 * (size_t)hp->lin_n_k * (size_t)hp->lin_k_dim + LV,
           LH = (size_t)hp->lin_n_v, QG = hp->attn_out_gate ? qw : 0;
    /* the activations, one field and its floats each (0: the model has no use for it) */
    const struct { float **field; size_t floats; } scratch[] = {
        {&f->x, T * E},         {&f->xb, T * E},         {&f->q, T * qw},           {&f->k, T * kw},
        {&f->v, T * vw},        {&f->att, T * aw},       {&f->g, T * FF},           {&f->u, T * FF},
        /* Gemma 4 per-layer inputs */
        {&f->ple_tok, T * LP},  {&f->ple_ctx, T * LP},   {&f->ple_x, T * P},        {&f->ple_g, T * P},
        /* mixture of experts */
        {&f->moe_in, ME},       {&f->moe_out, ME},       {&f->moe_gx, ME},          {&f->moe_d, ME},
        {&f->moe_g, MI},        {&f->moe_u, MI},         {&f->moe_logits, MX},
        /* Gemma 4 assistant */
        {&f->asst_e, AB},       {&f->asst_h, AB},        {&f->asst_out, AB},        {&f->asst_cent, AC},
        /* linear attention and the attention's output gate */
        {&f->lin_qkv, T * LC},  {&f->lin_z, T * LV},     {&f->lin_b, T * LH},       {&f->lin_a, T * LH},
        {&f->lin_out, T * LV},  {&f->qg, 2 * T * QG},    {&f->gate, T * QG},
    };
    const size_t n_scratch = sizeof scratch / sizeof scratch[0];
    size_t total = 0;
    for (size_t i = 0; i < n_scratch; i++) total += up64(scratch[i].floats * sizeof(float));
    size_t half = (size_t)hp->n_rot / 2;
    f->mem = hearth_buf_alloc(be, total);
    f->host_mem = malloc(up64(half * sizeof(float)) * 3 + 64);
    f->idx_host = malloc(4 * T * sizeof(int32_t));
    f->idx_cap = 4 * (int64_t)T;
    f->runs = malloc(T * sizeof *f->runs);
    f->lora_runs = malloc(T * sizeof *f->lora_runs);
    f->lora_segs = malloc(T * sizeof *f->lora_segs);
    if (!f->mem || !f->host_mem || !f->idx_host || !f->runs || !f->lora_runs || !f->lora_segs) {
        hearth_fwd_destroy(f);
        return NULL;
    }
    char *p = f->mem;
    for (size_t i = 0; i < n_scratch; i++) {
        *scratch[i].field = (float *)p;
        p += up64(scratch[i].floats * sizeof(float));
    }
    if (P > 0) { /* row t * n_layer + il of the per-layer inputs is layer il's input of token t */
        int32_t *rows = malloc((size_t)hp->n_layer * T * sizeof(int32_t));
        f->ple_rows = rows ? hearth_buf_alloc(be, (size_t)hp->n_layer * T * sizeof(int32_t)) : NULL;
        if (f->ple_rows) {
            for (int32_t il = 0; il < hp->n_layer; il++)
                for (size_t t = 0; t < T; t++) rows[(size_t)il * T + t] = (int32_t)t * hp->n_layer + il;
            hearth_buf_upload(be, f->ple_rows, rows, (size_t)hp->n_layer * T * sizeof(int32_t));
        }
        free(rows);
        if (!f->ple_rows) {
            hearth_fwd_destroy(f);
            return NULL;
        }
    }
    if (QG > 0) { /* qg's rows of head_dim: the query halves, then the gate halves */
        size_t n = T * (size_t)hp->n_head;
        int32_t *rows = malloc(2 * n * sizeof(int32_t));
        f->gate_rows = rows ? hearth_buf_alloc(be, 2 * n * sizeof(int32_t)) : NULL;
        if (f->gate_rows) {
            for (size_t i = 0; i < n; i++) rows[i] = (int32_t)(2 * i), rows[n + i] = (int32_t)(2 * i + 1);
            hearth_buf_upload(be, f->gate_rows, rows, 2 * n * sizeof(int32_t));
        }
        free(rows);
        if (!f->gate_rows) {
            hearth_fwd_destroy(f);
            return NULL;
        }
    }
    if (moe) {
        size_t used = T * (size_t)hp->n_expert_used;
        f->moe_host = malloc(MX * sizeof(float));
        f->moe_sel = malloc(used * sizeof(int32_t));
        f->moe_w = malloc(used * sizeof(float));
        f->moe_rows = hearth_buf_alloc(be, used * sizeof(int32_t));
        if (!f->moe_host || !f->moe_sel || !f->moe_w || !f->moe_rows) {
            hearth_fwd_destroy(f);
            return NULL;
        }
    }
    if (AB > 0) {
        f->rope_pos = hearth_buf_alloc(be, T * sizeof(int32_t));
        f->rope_pos_host = malloc(T * sizeof(int32_t));
        f->cent_host = malloc((AC + (size_t)hp->n_vocab) * sizeof(float));
        if (!f->rope_pos || !f->rope_pos_host || !f->cent_host) {
            hearth_fwd_destroy(f);
            return NULL;
        }
    }
    f->inv_freq = f->host_mem;
    f->inv_freq_swa = (float *)((char *)f->host_mem + up64(half * sizeof(float)));
    f->inv_freq_long = (float *)((char *)f->host_mem + 2 * up64(half * sizeof(float)));
    if (hp->rope_kind == HEARTH_ROPE_LONGROPE) hearth_hparams_inv_freq_at(hp, false, hp->rope_orig_ctx + 1, f->inv_freq_long);
    /* NOTE: the numerics (backend/numerics.h) decide the recipe: the ref tier computes as
     * transformers does (the f32 specification it is compared with); l1 and l2 round as llama.cpp
     * does for GGUF models, since with 8-bit activations and f16 KV every rounding difference can
     * flip a later rounding. Hugging Face checkpoints (hf_numerics) always take transformers'
     * angles (scaling included) and exact GELU. */
    f->nx = nx ? hearth_numerics_resolve(*nx) : hearth_backend_numerics(be);
    bool hf_angles = f->nx.tier == HEARTH_NUMERICS_REF || hp->hf_numerics;
    if (hp->hf_numerics) {
        hearth_hparams_inv_freq(hp, false, f->inv_freq);
        hearth_hparams_inv_freq(hp, true, f->inv_freq_swa);
    } else {
        hearth_rope_inv_freq(f->inv_freq, hp->n_rot, hp->rope_base, hp->rope_scale);
        hearth_rope_inv_freq(f->inv_freq_swa, hp->n_rot, hp->rope_base_swa, 1.0f);
    }
    float mscale = hp->rope_mscale > 0 ? hp->rope_mscale : 1.0f;
    f->rope = (hearth_rope_params){.inv_freq = hf_angles ? f->inv_freq : NULL, .neox = hp->rope_neox,
                                   .theta_scale = powf(hp->rope_base, -2.0f / (float)hp->n_rot),
                                   .freq_scale = 1.0f / hp->rope_scale, .mscale = mscale};
    f->rope_swa = (hearth_rope_params){.inv_freq = hf_angles ? f->inv_freq_swa : NULL, .neox = hp->rope_neox,
                                       .theta_scale = powf(hp->rope_base_swa, -2.0f / (float)hp->n_rot),
                                       .freq_scale = 1.0f, .mscale = mscale};
    /* mscale applies to the global layers' scaled rope only (yarn); sliding gemma3 layers are plain */
    if (hearth_arch_info_of(hp->arch) && hearth_arch_info_of(hp->arch)->rope_base_swa > 0) f->rope_swa.mscale = 1.0f;
    /* llama.cpp scales Gemma's queries before they are rounded to f16 for the KQ product */
    f->scale_q = !hf_angles && hp->arch == HEARTH_ARCH_GEMMA3;
    f->glu = hp->ffn == HEARTH_FFN_SWIGLU ? HEARTH_GLU_SWIGLU
             : hf_angles                  ? HEARTH_GLU_GEGLU
                                          : HEARTH_GLU_GEGLU_F16;
    return f;
}

hearth_fwd *hearth_fwd_create_scripted(const hearth_model *m, int32_t max_tok, hearth_fwd_script_fn fn, void *ctx) {
    hearth_fwd *f = max_tok > 0 && fn ? calloc(1, sizeof *f) : NULL;
    if (!f) return NULL;
    f->idx_host = malloc(4 * (size_t)max_tok * sizeof(int32_t)); /* step_check's out_rows */
    if (!f->idx_host) {
        free(f);
        return NULL;
    }
    f->m = m;
    f->max_tok = max_tok;
    f->script = fn;
    f->script_ctx = ctx;
    return f;
}

void hearth_fwd_destroy(hearth_fwd *f) {
    if (!f) return;
    for (int32_t i = 0; i < f->n_dyn_chunks; i++) free(f->dyn_chunks[i]);
    free(f->dyn_chunks);
    free(f->runs);
    while (f->n_lora_kept > 0) lora_drop(f, 0);
    free(f->lora_kept);
    free(f->lora_runs);
    free(f->lora_segs);
    free(f->moe_host);
    free(f->moe_sel);
    free(f->moe_w);
    free(f->rope_pos_host);
    free(f->cent_host);
    if (f->be) {
        hearth_buf_free(f->be, f->rope_pos);
        hearth_buf_free(f->be, f->moe_rows);
        hearth_buf_free(f->be, f->ple_rows);
        hearth_buf_free(f->be, f->gate_rows);
        hearth_buf_free(f->be, f->mem);
    }
    free(f->host_mem);
    free(f->idx_host);
    free(f->lin_next);
    free(f);
}

void hearth_fwd_set_trace(hearth_fwd *f, hearth_fwd_trace_fn fn, void *user) {
    if (f->be && !hearth_backend_host_memory(f->be)) return; /* the hook reads activations in host memory */
    f->trace = fn;
    f->trace_user = user;
}

int32_t hearth_fwd_max_tokens(const hearth_fwd *f) { return f->max_tok; }

hearth_backend *hearth_fwd_backend(const hearth_fwd *f) { return f->be; }

hearth_numerics hearth_fwd_numerics(const hearth_fwd *f) { return f->nx; }

bool hearth_fwd_supported(const hearth_model *m, hearth_backend *be, char *why, size_t cap) {
    const hearth_hparams *hp = &m->hp;
    const hearth_weight *one[] = {&m->tok_embd, &m->output};
    if (hp->lin_n_v > 0 && !hearth_backend_has_deltanet(be)) {
        snprintf(why, cap, "the %s backend has no gated DeltaNet (the linear-attention layers of %s run on the CPU "
                 "backend)", hearth_backend_name(be), hearth_arch_info_of(hp->arch)->hf_type);
        return false;
    }
    if (hp->attn_out_gate && !hearth_backend_host_memory(be)) {
        snprintf(why, cap, "the %s backend has no sigmoid output gate (%s runs on the CPU backend)",
                 hearth_backend_name(be), hearth_arch_info_of(hp->arch)->hf_type);
        return false;
    }
    if (hp->attn_sinks && !hearth_backend_host_memory(be)) {
        snprintf(why, cap, "the %s backend has no attention sinks or clamped SwiGLU (gpt-oss runs on the CPU "
                 "backend)", hearth_backend_name(be));
        return false;
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        int32_t hd = hearth_hparams_head_dim(hp, il), group = hp->n_head / hearth_hparams_n_head_kv(hp, il);
        if (hearth_backend_attn_supports(be, hd, group)) continue;
        snprintf(why, cap, "the %s backend's attention does not run heads of %d dims with %d query heads per kv "
                 "head (layer %d)", hearth_backend_name(be), hd, group, il);
        return false;
    }
    for (int32_t il = -1; il < hp->n_layer; il++) {
        const hearth_layer *l = il >= 0 ? &m->layers[il] : NULL;
        const hearth_weight *ws[] = {l ? &l->wq : one[0], l ? &l->wk : one[1], l ? &l->wv : NULL,
                                     l ? &l->wo : NULL, l ? &l->w_gate : NULL, l ? &l->w_up : NULL,
                                     l ? &l->w_down : NULL, l ? &l->router : NULL, l ? &l->exp_gate : NULL,
                                     l ? &l->exp_up : NULL, l ? &l->exp_down : NULL};
        const hearth_weight *more[] = {l ? &l->ple_gate : &m->ple_embd, l ? &l->ple_proj : &m->ple_model_proj};
        for (size_t i = 0; i < 2; i++)
            if (more[i]->data && !hearth_backend_supports(be, more[i]->type)) {
                snprintf(why, cap, "the %s backend has no kernel for %s weights", hearth_backend_name(be),
                         hearth_type_name(more[i]->type));
                return false;
            }
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            if (!ws[i] || !ws[i]->data || hearth_backend_supports(be, ws[i]->type)) continue;
            snprintf(why, cap, "the %s backend has no kernel for %s weights", hearth_backend_name(be),
                     hearth_type_name(ws[i]->type));
            return false;
        }
    }
    return true;
}

/* Check the batch against the view; fill f->idx_host's out_rows part, f->n_out and f->max_len. */
static hearth_status step_check(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv) {
    if (b->n_tokens <= 0 || b->n_tokens > f->max_tok) return HEARTH_E_INVALID;
    int32_t *out_rows = f->idx_host + 3 * (int64_t)f->max_tok;
    f->n_out = 0;
    f->max_len = 0;
    f->min_run = b->n_tokens;
    f->max_run = 0;
    if (f->m->hp.lin_n_v > 0) { /* the state slots: a view without them cannot run the model */
        if (!kv->lin_state || !kv->lin_len) return HEARTH_E_INVALID;
        if (kv->n_slots > f->lin_cap) {
            int32_t *p = realloc(f->lin_next, (size_t)kv->n_slots * sizeof(int32_t));
            if (!p) return HEARTH_E_NOMEM;
            f->lin_next = p;
            f->lin_cap = kv->n_slots;
        }
        for (int32_t s = 0; s < kv->n_slots; s++) f->lin_next[s] = -1;
    }
    if (b->n_snap < 0 || (b->n_snap > 0 && (f->m->hp.lin_n_v <= 0 || !b->snap_at || !b->snap_to)))
        return HEARTH_E_INVALID;
    for (int32_t i = 0; i < b->n_snap; i++) /* snapshots: after tokens in order, to rows no slot runs on */
        if (b->snap_at[i] < 0 || b->snap_at[i] >= b->n_tokens || (i > 0 && b->snap_at[i] <= b->snap_at[i - 1]) ||
            b->snap_to[i] < kv->n_slots || b->snap_to[i] >= kv->lin_rows)
            return HEARTH_E_INVALID;
    for (int32_t t = 0, run = 0; t < b->n_tokens; t++) {
        run = t > 0 && b->seq[t] == b->seq[t - 1] ? run + 1 : 1;
        if ((t + 1 == b->n_tokens || b->seq[t + 1] != b->seq[t]) && run < f->min_run) f->min_run = run;
        if (run > f->max_run) f->max_run = run;
        if (b->seq[t] < 0 || b->seq[t] >= kv->n_slots || b->pos[t] < 0 || b->pos[t] >= kv->n_ctx ||
            b->token[t] < 0 || b->token[t] >= f->m->hp.n_vocab)
            return HEARTH_E_INVALID;
        /* every group: the block written, and the first one the query reads */
        const hearth_kv_blocks *bl = &kv->blocks;
        for (int32_t g = 0; g < (kv->n_groups > 1 ? kv->n_groups : 1); g++) {
            const int32_t *row = bl->table + ((int64_t)g * kv->n_slots + b->seq[t]) * bl->max_blocks;
            int32_t w = kv->group_window ? kv->group_window[g] : 0, j0 = w > 0 && b->pos[t] >= w ? b->pos[t] - w + 1 : 0;
            int32_t blk = row[b->pos[t] / bl->block_size], first = row[j0 / bl->block_size];
            if (blk < 0 || blk >= kv->n_blocks || first < 0 || first >= kv->n_blocks) return HEARTH_E_INVALID;
        }
        if (f->m->hp.lin_n_v > 0) { /* a linear-attention state continues where it stands, or restarts */
            int32_t s = b->seq[t], next = f->lin_next[s] >= 0 ? f->lin_next[s] : kv->lin_len[s];
            if (b->pos[t] != 0 && b->pos[t] != next) return HEARTH_E_INVALID;
            f->lin_next[s] = b->pos[t] + 1;
        }
        bool want = b->want_logits ? b->want_logits[t] != 0 : t == b->n_tokens - 1;
        if (want) out_rows[f->n_out++] = t;
        if (b->pos[t] + 1 > f->max_len) f->max_len = b->pos[t] + 1;
    }
    /* keys past a query (pos_end) must be its sequence's and written in this step: at most
     * the last position of its run of tokens */
    for (int32_t t = b->n_tokens - 1, last = 0; b->pos_end && t >= 0; t--) {
        if (t == b->n_tokens - 1 || b->seq[t + 1] != b->seq[t]) last = b->pos[t];
        if (b->pos_end[t] < b->pos[t] || b->pos_end[t] > last) return HEARTH_E_INVALID;
        if (b->pos_end[t] + 1 > f->max_len) f->max_len = b->pos_end[t] + 1;
    }
    return HEARTH_OK;
}

enum { DYN_CHUNK = 64 };

/* The dynamic NTK table of sequence length len (> n_ctx_train), made on first use. */
static const float *dyn_table(hearth_fwd *f, int32_t len) {
    const hearth_hparams *hp = &f->m->hp;
    int64_t i = (int64_t)len - hp->n_ctx_train - 1, half = hp->n_rot / 2;
    int32_t ic = (int32_t)(i / DYN_CHUNK);
    if (ic >= f->n_dyn_chunks) {
        if (!hearth_buf_grow(&f->dyn_chunks, &f->cap_dyn_chunks, (size_t)ic + 1, sizeof *f->dyn_chunks, 8)) return NULL;
        while (f->n_dyn_chunks <= ic) f->dyn_chunks[f->n_dyn_chunks++] = NULL;
    }
    if (!f->dyn_chunks[ic]) {
        float *t = malloc((size_t)(DYN_CHUNK * half) * sizeof(float));
        if (!t) return NULL;
        for (int32_t k = 0; k < DYN_CHUNK; k++)
            hearth_hparams_inv_freq_at(hp, false, hp->n_ctx_train + 1 + ic * DYN_CHUNK + k, t + k * half);
        f->dyn_chunks[ic] = t;
    }
    return f->dyn_chunks[ic] + (i % DYN_CHUNK) * half;
}

/* Split the step's tokens into RoPE runs (see hearth_fwd.runs): consecutive tokens of one
 * sequence; each takes the tables of its sequence's length in this step (its largest
 * position + 1, as transformers takes it for a forward call). b is in host memory. */
static hearth_status rope_runs(hearth_fwd *f, const hearth_batch *b) {
    const hearth_hparams *hp = &f->m->hp;
    f->n_runs = 0;
    f->stretched = false;
    bool grows = hp->rope_kind == HEARTH_ROPE_DYNAMIC || hp->rope_kind == HEARTH_ROPE_LONGROPE;
    if (!grows) {
        f->runs[f->n_runs++] = (struct hearth_rope_run){0, b->n_tokens, f->rope, f->rope_swa};
        return HEARTH_OK;
    }
    for (int32_t t = 0; t < b->n_tokens; t++) {
        if (f->n_runs > 0 && b->seq[f->runs[f->n_runs - 1].t0] == b->seq[t]) f->runs[f->n_runs - 1].n++;
        else f->runs[f->n_runs++] = (struct hearth_rope_run){t, 1, f->rope, f->rope_swa};
    }
    const hearth_arch_info *ai = hearth_arch_info_of(hp->arch);
    bool local = ai && ai->rope_base_swa > 0; /* sliding layers keep plain RoPE */
    for (int32_t r = 0; r < f->n_runs; r++) {
        int32_t len = 0;
        for (int32_t t = 0; t < b->n_tokens; t++)
            if (b->seq[t] == b->seq[f->runs[r].t0] && b->pos[t] + 1 > len) len = b->pos[t] + 1;
        if (!hearth_hparams_rope_stretched(hp, len)) continue;
        const float *table = hp->rope_kind == HEARTH_ROPE_LONGROPE ? f->inv_freq_long : dyn_table(f, len);
        if (!table) return HEARTH_E_NOMEM;
        f->runs[r].rp.inv_freq = table;
        if (!local) f->runs[r].rp_swa.inv_freq = table;
        f->stretched = true;
    }
    return HEARTH_OK;
}

bool hearth_fwd_lora_supported(const hearth_fwd *f, char *why, size_t cap) {
    if (!f->be || hearth_backend_has_lora(f->be)) return true;
    snprintf(why, cap, "the %s backend does not apply LoRA adapters yet (use --device cpu)", hearth_backend_name(f->be));
    return false;
}

/* Keep adapter a's matrices on the backend: take a reference the first time a step uses it. */
static hearth_status lora_keep(hearth_fwd *f, const hearth_lora *a) {
    for (int32_t i = 0; i < f->n_lora_kept; i++)
        if (f->lora_kept[i] == a) return HEARTH_OK;
    if (f->n_lora_kept == f->cap_lora_kept) {
        int32_t cap = f->cap_lora_kept ? 2 * f->cap_lora_kept : 8;
        const hearth_lora **k = realloc(f->lora_kept, (size_t)cap * sizeof *k);
        if (!k) return HEARTH_E_NOMEM;
        f->lora_kept = k;
        f->cap_lora_kept = cap;
    }
    f->lora_kept[f->n_lora_kept++] = hearth_lora_retain(a);
    return HEARTH_OK;
}

/* The step's runs of one adapter (see hearth_fwd.lora_runs). */
static hearth_status lora_runs(hearth_fwd *f, const hearth_batch *b) {
    f->n_lora_runs = 0;
    f->lora_gate_up = false;
    hearth_fwd_lora_sweep(f);
    if (!b->lora) return HEARTH_OK;
    for (int32_t t = 0; t < b->n_tokens; t++) {
        const hearth_lora *a = b->lora[t];
        if (!a) continue;
        if (a->n_layer != f->m->hp.n_layer) return HEARTH_E_INVALID; /* loaded for another model */
        struct hearth_lora_run *last = f->n_lora_runs ? &f->lora_runs[f->n_lora_runs - 1] : NULL;
        if (last && last->a == a && last->t0 + last->n == t) last->n++;
        else f->lora_runs[f->n_lora_runs++] = (struct hearth_lora_run){t, 1, a};
    }
    if (f->n_lora_runs && (!f->be || !hearth_backend_has_lora(f->be))) return HEARTH_E_UNSUPPORTED;
    hearth_status st = HEARTH_OK;
    for (int32_t r = 0; r < f->n_lora_runs && !st && hearth_backend_keeps_copies(f->be); r++)
        st = lora_keep(f, f->lora_runs[r].a);
    if (st) return st;
    for (int32_t r = 0; r < f->n_lora_runs; r++)
        f->lora_gate_up |= hearth_lora_touches(f->lora_runs[r].a, HEARTH_LORA_GATE) ||
                           hearth_lora_touches(f->lora_runs[r].a, HEARTH_LORA_UP);
    return HEARTH_OK;
}

struct step_ctx {
    hearth_fwd           *f;
    const hearth_batch   *b;
    const hearth_kv_view *kv;
    float                *logits;
    void (*family)(hearth_fwd *, const hearth_batch *, const hearth_kv_view *, float *);
};

static void step_family(void *arg) {
    struct step_ctx *sc = arg;
    sc->family(sc->f, sc->b, sc->kv, sc->logits);
}

hearth_status hearth_fwd_step_run(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                  float **out) {
    hearth_status st = step_check(f, b, kv);
    if (st) return st;
    *out = logits;
    if (f->script) { /* a test's model: its states advance as a model's do */
        if ((st = f->script(f->script_ctx, b, kv, logits))) return st;
        for (int32_t s = 0; f->m->hp.lin_n_v > 0 && s < kv->n_slots; s++)
            if (f->lin_next[s] >= 0) kv->lin_len[s] = f->lin_next[s];
        return HEARTH_OK;
    }
    if ((st = rope_runs(f, b))) return st;
    if ((st = lora_runs(f, b))) return st;
    /* images: Gemma 3's forward takes them, reading the rows and pos_end in host memory */
    if ((b->embd || b->pos_end) && (f->m->hp.arch != HEARTH_ARCH_GEMMA3 || !hearth_backend_host_memory(f->be)))
        return HEARTH_E_UNSUPPORTED;
    hearth_batch db = *b;
    hearth_kv_view dkv = *kv;
    int64_t T = f->max_tok, n = b->n_tokens, n_vocab = f->m->hp.n_vocab;
    const hearth_kv_blocks *bl = &kv->blocks;
    int64_t n_table = (int64_t)(kv->n_groups > 1 ? kv->n_groups : 1) * kv->n_slots * bl->max_blocks;
    /* token, pos, seq, out_rows (each T long) and the block table, packed and staged in one
     * copy (on a host backend the ops read the packed host copy itself) */
    if (4 * T + n_table > f->idx_cap) {
        int32_t *h = realloc(f->idx_host, (size_t)(4 * T + n_table) * sizeof(int32_t));
        if (!h) return HEARTH_E_NOMEM;
        f->idx_host = h;
        f->idx_cap = 4 * T + n_table;
    }
    int32_t *h = f->idx_host;
    memcpy(h, b->token, (size_t)n * sizeof(int32_t));
    memcpy(h + T, b->pos, (size_t)n * sizeof(int32_t));
    memcpy(h + 2 * T, b->seq, (size_t)n * sizeof(int32_t));
    memcpy(h + 4 * T, bl->table, (size_t)n_table * sizeof(int32_t));
    int32_t *d = hearth_step_stage(f->be, HEARTH_STAGE_INDEX, h, (size_t)(4 * T + n_table) * sizeof(int32_t), true);
    *out = hearth_step_stage(f->be, HEARTH_STAGE_LOGITS, logits, (size_t)f->n_out * (size_t)n_vocab * sizeof(float),
                             false);
    if (!d || (!*out && f->n_out > 0)) return HEARTH_E_NOMEM;
    db.token = d;
    db.pos = d + T;
    db.seq = d + 2 * T;
    db.want_logits = NULL; /* read through out_rows */
    dkv.blocks.table = d + 4 * T;
    f->out_rows = d + 3 * T;
    struct step_ctx sc = {.f = f, .b = &db, .kv = &dkv, .logits = *out, .family = hearth_llama_forward};
    switch (f->m->hp.arch) {
    case HEARTH_ARCH_GEMMA2:
    case HEARTH_ARCH_GEMMA3:
        sc.family = hearth_gemma3_forward;
        break;
    case HEARTH_ARCH_GEMMA4:
        sc.family = f->m->hp.n_embd_backbone > 0 ? hearth_gemma4_assistant_forward : hearth_gemma4_forward;
        if (f->m->hp.n_embd_backbone > 0 && !f->asst_target) return HEARTH_E_INVALID; /* hearth_forward_assistant */
        break;
    case HEARTH_ARCH_LLAMA:
    case HEARTH_ARCH_QWEN2:
    case HEARTH_ARCH_QWEN3:
    case HEARTH_ARCH_MISTRAL:
    case HEARTH_ARCH_PHI3:
    case HEARTH_ARCH_SMOLLM3:
    case HEARTH_ARCH_QWEN3MOE:
    case HEARTH_ARCH_GPT_OSS:
    case HEARTH_ARCH_QWEN3_5:
    case HEARTH_ARCH_QWEN3NEXT:
    case HEARTH_ARCH_QWEN3_5MOE:
        break;
    default:
        return HEARTH_E_UNSUPPORTED;
    }
    /* A backend may replay small steps (decode) as one graph: every op argument is then fixed
     * but the buffers' contents, so the attention split is sized for the whole context and the
     * key names everything else a step's ops depend on (incl. whether a sequence has more than
     * one token in the step: the attention's tiling follows it, and the forward's own scratch:
     * two forwards on one backend, a target and its Gemma 4 assistant reading the target's
     * cache, must never replay each other's graphs) (the staging buffers are the backend's own). Not with stretched RoPE tables (they change per step) nor experts (routed on the host). */
    uint64_t key = 0;
    if (!f->stretched && f->m->hp.n_expert == 0 && f->n_lora_runs == 0 && !b->embd && !b->pos_end &&
        hearth_step_replays(f->be, n)) {
        f->max_len = kv->n_ctx;
        uint64_t parts[] = {(uint64_t)n, (uint64_t)f->n_out, (uint64_t)(uintptr_t)kv->k[0],
                            (uint64_t)(uintptr_t)kv->v[0], (uint64_t)n_table, (uint64_t)kv->n_ctx,
                            (uint64_t)bl->max_blocks, (uint64_t)bl->block_size, (uint64_t)kv->k_type,
                            (uint64_t)kv->v_type, (uint64_t)(f->max_run > 1), (uint64_t)(uintptr_t)f->mem};
        key = 1469598103934665603ull;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) key = (key ^ parts[i]) * 1099511628211ull;
        for (int32_t il = 0; kv->layer_k_type && il < f->m->hp.n_layer; il++) /* a per-layer scheme */
            key = (key ^ ((uint64_t)kv->layer_k_type[il] << 8 | (uint64_t)kv->layer_v_type[il])) * 1099511628211ull;
        if (key == 0) key = 1;
    }
    hearth_step_run(f->be, key, n, step_family, &sc);
    for (int32_t s = 0; f->m->hp.lin_n_v > 0 && s < kv->n_slots; s++) /* the states advanced */
        if (f->lin_next[s] >= 0) kv->lin_len[s] = f->lin_next[s];
    return HEARTH_OK;
}

void hearth_fwd_set_hidden_out(hearth_fwd *f, float *hidden) { f->hidden_out = hidden; }

/* The final-normed hidden states of the logits rows, to the caller's buffer when one is set
 * (hearth_blk_logits leaves them in f->xb). */
static void hidden_out(hearth_fwd *f) {
    if (f->hidden_out && f->be && f->n_out > 0)
        hearth_buf_download(f->be, f->hidden_out, f->xb, (size_t)f->n_out * (size_t)f->m->hp.n_embd * sizeof(float));
}

hearth_status hearth_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    float *out = NULL;
    hearth_status st = hearth_fwd_step_run(f, b, kv, logits, &out);
    if (st) return st;
    if (out != logits)
        hearth_buf_download(f->be, logits, out, (size_t)f->n_out * (size_t)f->m->hp.n_vocab * sizeof(float));
    hidden_out(f);
    return HEARTH_OK;
}

hearth_status hearth_forward_argmax(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                    int32_t *ids) {
    float *out = NULL;
    hearth_status st = hearth_fwd_step_run(f, b, kv, logits, &out);
    if (st) return st;
    if (f->be) {
        hearth_op_argmax(f->be, out, f->n_out, f->m->hp.n_vocab, ids);
        hidden_out(f);
        return HEARTH_OK;
    }
    for (int32_t r = 0; r < f->n_out; r++) { /* scripted (tests): the logits are the caller's */
        const float *row = out + (int64_t)r * f->m->hp.n_vocab;
        int32_t best = 0;
        for (int32_t i = 1; i < f->m->hp.n_vocab; i++)
            if (row[i] > row[best]) best = i;
        ids[r] = best;
    }
    return HEARTH_OK;
}

hearth_status hearth_forward_topm(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                  const hearth_topm_req *rq, const hearth_topm_edit *edits, int32_t n_edits,
                                  hearth_topm *out) {
    float *rows = NULL;
    hearth_status st = hearth_fwd_step_run(f, b, kv, logits, &rows);
    if (st) return st;
    f->last_out = rows;
    int64_t nv = f->m->hp.n_vocab;
    if (f->be) {
        hearth_op_topm(f->be, rows, f->n_out, nv, rq, edits, n_edits, out);
        hidden_out(f);
        return HEARTH_OK;
    }
    for (int32_t r = 0; r < f->n_out; r++) { /* scripted */
        hearth_topm_edit_ref(rows + r * nv, edits + rq[r].edit0, rq[r].n_edit);
        hearth_topm_row_ref(rows + r * nv, nv, rq + r, out + r);
    }
    return HEARTH_OK;
}

void hearth_forward_row(hearth_fwd *f, int32_t r, float *dst) {
    size_t bytes = (size_t)f->m->hp.n_vocab * sizeof(float);
    const float *src = f->last_out + (size_t)r * (size_t)f->m->hp.n_vocab;
    if (f->be) hearth_buf_download(f->be, dst, src, bytes);
    else if (dst != src) memcpy(dst, src, bytes);
}
