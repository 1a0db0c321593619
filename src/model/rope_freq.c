/*
 * rope_freq.c - RoPE inverse frequencies of Hugging Face checkpoints, computed in float in the
 * order transformers' rope init functions (modeling_rope_utils.py) compute them, so the
 * reference path's angles equal transformers' to the last bit where the operations allow.
 *
 *   default  inv_freq[i] = 1 / base^(2i / d)                       (d = rotated dims)
 *   linear   default / factor
 *   dynamic  default up to the training context (max_position_embeddings); past it the base
 *            grows with the sequence length L: base * (factor L / max - (factor - 1))^(d/(d-2)),
 *            in float32 as transformers computes it
 *   longrope 1 / (ext_i * base^(2i/d)) with ext the short factors up to
 *            original_max_position_embeddings and the long ones past it; cos and sin times
 *            the attention factor (hp->rope_mscale)
 *   proportional (Gemma 4 full layers) base^(-2i/d) / factor for the first n_rot_freq / 2
 *            frequencies, 0 for the rest (those dims do not turn), d the whole head
 *   llama3   long wavelengths (> orig / low_freq_factor) / factor, short ones (< orig /
 *            high_freq_factor) kept, a smooth blend between
 *   yarn     blend of interpolated (/ factor) and extrapolated frequencies by a linear ramp
 *            over [low, high] dims from beta_fast / beta_slow rotations; cos and sin are then
 *            multiplied by attention_factor (hp->rope_mscale, applied by the rope op); the
 *            range's ends are rounded out to whole dims unless the config says truncate: false
 *            (gpt-oss)
 */
#include "model/hf_config.h"

#include <math.h>

static double correction_dim(double n_rot_turns, int d, double base, double orig) {
    return (d * log(orig / (n_rot_turns * 2 * M_PI))) / (2 * log(base));
}

int32_t hearth_hparams_rope_dims(const hearth_hparams *hp, bool swa) {
    if (hp->arch == HEARTH_ARCH_GEMMA4) return swa ? hp->head_dim_swa : hp->head_dim_full;
    return hp->n_rot;
}

bool hearth_hparams_rope_stretched(const hearth_hparams *hp, int32_t seq_len) {
    if (hp->rope_kind == HEARTH_ROPE_DYNAMIC) return seq_len > hp->n_ctx_train;
    if (hp->rope_kind == HEARTH_ROPE_LONGROPE) return seq_len > hp->rope_orig_ctx;
    return false;
}

void hearth_hparams_inv_freq(const hearth_hparams *hp, bool swa, float *inv_freq) {
    hearth_hparams_inv_freq_at(hp, swa, 0, inv_freq);
}

void hearth_hparams_inv_freq_at(const hearth_hparams *hp, bool swa, int32_t seq_len, float *inv_freq) {
    int d = hearth_hparams_rope_dims(hp, swa);
    /* only families with their own local RoPE (gemma3) give sliding layers plain frequencies */
    const hearth_arch_info *ai = hearth_arch_info_of(hp->arch);
    bool local = swa && ai && ai->rope_base_swa > 0;
    float base = local ? hp->rope_base_swa : hp->rope_base;
    hearth_rope_kind kind = local ? HEARTH_ROPE_DEFAULT : hp->rope_kind;
    float factor = hp->rope_factor;
    if (kind == HEARTH_ROPE_DYNAMIC && seq_len > hp->n_ctx_train) {
        /* float32 tensors in transformers: (factor * L / max - (factor - 1)) ** (d / (d - 2)) */
        float t = factor * (float)seq_len;
        t = t / (float)hp->n_ctx_train;
        t = t - (factor - 1.0f);
        base = base * powf(t, (float)((double)d / (double)(d - 2)));
    }
    const float *ext = hp->rope_kind == HEARTH_ROPE_LONGROPE && seq_len > hp->rope_orig_ctx ? hp->longrope_long
                                                                                             : hp->longrope_short;
    for (int i = 0; i < d / 2; i++) {
        float pos_freq = powf(base, (float)(2 * i) / (float)d);
        float f = 1.0f / pos_freq;
        switch (kind) {
        case HEARTH_ROPE_PROPORTIONAL:
            f = 2 * i < hp->n_rot_freq ? f / factor : 0.0f;
            break;
        case HEARTH_ROPE_LONGROPE:
            f = 1.0f / (ext[i] * pos_freq);
            break;
        case HEARTH_ROPE_LINEAR:
            f = f / factor;
            break;
        case HEARTH_ROPE_LLAMA3: {
            float orig = (float)hp->rope_orig_ctx;
            float lo_wavelen = orig / hp->rope_lo_freq, hi_wavelen = orig / hp->rope_hi_freq;
            float wavelen = 2.0f * (float)M_PI / f;
            float fl = wavelen > lo_wavelen ? f / factor : f;
            float smooth = (orig / wavelen - hp->rope_lo_freq) / (hp->rope_hi_freq - hp->rope_lo_freq);
            float smoothed = (1 - smooth) * fl / factor + smooth * fl;
            bool medium = !(wavelen < hi_wavelen) && !(wavelen > lo_wavelen);
            f = medium ? smoothed : fl;
            break;
        }
        case HEARTH_ROPE_YARN: {
            double lo = correction_dim(hp->yarn_beta_fast, d, base, hp->rope_orig_ctx);
            double hi = correction_dim(hp->yarn_beta_slow, d, base, hp->rope_orig_ctx);
            if (!hp->yarn_no_truncate) lo = floor(lo), hi = ceil(hi);
            if (lo < 0) lo = 0;
            if (hi > d - 1) hi = d - 1;
            if (lo == hi) hi += 0.001;
            float ramp = ((float)i - (float)lo) / (float)(hi - lo);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            float extra = 1 - ramp; /* inv_freq_extrapolation_factor */
            float interp = 1.0f / (factor * pos_freq);
            f = interp * (1 - extra) + f * extra;
            break;
        }
        default:
            break;
        }
        inv_freq[i] = f;
    }
}
