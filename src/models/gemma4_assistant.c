/*
 * gemma4_assistant.c - the Gemma 4 assistant drafter (transformers' Gemma4AssistantForCausalLM):
 * a small Gemma 4 decoder that drafts for a Gemma 4 target from the target's own state.
 *
 *   x      = W_pre [embed_target(token) * sqrt(n_embd_target) ; h]     h: the target's final-normed
 *                                                                      hidden state of the row that
 *                                                                      produced token (then the
 *                                                                      previous draft step's h')
 *   for each layer il:  Gemma 4's layer (gemma4.c), its queries at the token's position p + 1,
 *                       attending to the target's cache of positions <= p (the last layer of the
 *                       target that stores the KV of its kind); sliding layers see the last
 *                       window + 1 of them; no KV of its own, nothing written
 *   y      = final_norm(x)
 *   h'     = W_post y                                                  [n_embd_target]
 *   logits = lm_head(y)                                                no soft-cap
 *
 * With use_ordered_embeddings the logits are centroid-masked: c = W_centroids y picks the top k
 * centroids, each a run of n_vocab / n_centroids ids in token_ordering; those ids keep their
 * logits, every other id gets the least kept logit minus 1 (transformers takes the least over
 * the whole batch; here over the row, the same for one row). transformers gathers only the
 * kept rows of lm_head; this computes the whole head (the same dot products) and masks on the
 * host, which costs a full-vocabulary matmul per draft but keeps one code path.
 *
 * The pre-projection takes the concatenation as two matmuls over views of its two column
 * halves (model_st.c), so no concatenated input is ever built.
 */
#include "models/forward_internal.h"

#include <math.h>
#include <string.h>

void hearth_gemma4_assistant_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    const hearth_model *m = f->m, *tm = f->asst_target;
    const hearth_hparams *hp = &m->hp;
    int64_t T = b->n_tokens, E = hp->n_embd, B = hp->n_embd_backbone;

    hearth_op_get_rows(f->be, &tm->tok_embd, b->token, T, tm->hp.embd_scale, f->asst_e);
    hearth_op_matmul(f->be, &m->pre_proj_e, f->asst_e, T, f->x, E);
    hearth_op_matmul(f->be, &m->pre_proj_h, f->asst_h, T, f->xb, E);
    hearth_op_add(f->be, f->x, f->xb, T * E);
    hearth_fwd_trace(f, "inp_proj", -1, "ADD", f->x, T, E);
    for (int32_t il = 0; il < hp->n_layer; il++) hearth_gemma4_layer(f, b, kv, il);
    hearth_blk_logits(f, logits); /* f->xb: the final-normed rows */
    hearth_op_matmul(f->be, &m->post_proj, f->xb, f->n_out, f->asst_out, B);
    if (hp->n_centroids > 0) hearth_op_matmul(f->be, &m->centroids, f->xb, f->n_out, f->asst_cent, hp->n_centroids);
}

/* Keep the logits of the ids of row's top centroid_top_k centroids (cent: the row's centroid
 * logits, scratch: a taken centroid's becomes -inf); every other id gets the least kept logit
 * minus 1. tmp: [n_vocab] scratch. */
static void mask_row(const hearth_model *m, float *cent, float *row, float *tmp) {
    const hearth_hparams *hp = &m->hp;
    int32_t NC = hp->n_centroids, K = hp->centroid_top_k, per = hp->n_vocab / NC;
    float least = INFINITY;
    for (int32_t k = 0; k < K; k++) { /* selection: K is small */
        int32_t best = -1;
        for (int32_t c = 0; c < NC; c++)
            if (cent[c] != -INFINITY && (best < 0 || cent[c] > cent[best])) best = c;
        cent[best] = -INFINITY;
        for (int32_t j = 0; j < per; j++) {
            float v = row[m->token_order[(int64_t)best * per + j]];
            if (v < least) least = v;
        }
    }
    memcpy(tmp, row, (size_t)hp->n_vocab * sizeof(float));
    for (int32_t i = 0; i < hp->n_vocab; i++) row[i] = least - 1.0f;
    for (int32_t c = 0; c < NC; c++)
        if (cent[c] == -INFINITY)
            for (int32_t j = 0; j < per; j++) {
                int32_t id = m->token_order[(int64_t)c * per + j];
                row[id] = tmp[id];
            }
}

hearth_status hearth_forward_assistant(hearth_fwd *f, const hearth_model *target, const hearth_batch *b,
                                       const hearth_kv_view *target_kv, const float *hidden, float *logits,
                                       float *hidden_out) {
    const hearth_hparams *hp = &f->m->hp;
    if (hp->n_embd_backbone <= 0 || !target || target->hp.n_embd != hp->n_embd_backbone || !b->want_logits ||
        b->lora || b->n_tokens <= 0 || b->n_tokens > f->max_tok || !f->be)
        return HEARTH_E_INVALID;
    int64_t T = b->n_tokens, B = hp->n_embd_backbone;
    for (int64_t t = 0; t < T; t++)
        if (!b->want_logits[t]) return HEARTH_E_INVALID;
    for (int64_t t = 0; t < T; t++) f->rope_pos_host[t] = b->pos[t] + 1;
    hearth_buf_upload(f->be, f->rope_pos, f->rope_pos_host, (size_t)T * sizeof(int32_t));
    hearth_buf_upload(f->be, f->asst_h, hidden, (size_t)(T * B) * sizeof(float));
    f->asst_target = target;
    float *out = NULL;
    hearth_status st = hearth_fwd_step_run(f, b, target_kv, logits, &out);
    f->asst_target = NULL;
    if (st) return st;
    size_t nv = (size_t)hp->n_vocab;
    if (out != logits) hearth_buf_download(f->be, logits, out, (size_t)f->n_out * nv * sizeof(float));
    hearth_buf_download(f->be, hidden_out, f->asst_out, (size_t)f->n_out * (size_t)B * sizeof(float));
    if (hp->n_centroids > 0) {
        size_t nc = (size_t)hp->n_centroids;
        hearth_buf_download(f->be, f->cent_host, f->asst_cent, (size_t)f->n_out * nc * sizeof(float));
        for (int32_t r = 0; r < f->n_out; r++)
            mask_row(f->m, f->cent_host + (size_t)r * nc, logits + (size_t)r * nv, f->cent_host + (size_t)T * nc);
    }
    return HEARTH_OK;
}
