/*
 * rope_freq.c - RoPE inverse frequencies of Hugging Face checkpoints, computed in float in the
 * order transformers' rope init functions (modeling_rope_utils.py) compute them, so the
 * reference path's angles equal transformers' to the last bit where the operations allow.
 *
 *   default  inv_freq[i] = 1 / base^(2i / d)                       (d = rotated dims)
 *   linear   default / factor
 *   dynamic  default: NTK base growth only starts past the training context; hearth runs
 *            within it (see hf_config.h)
 *   llama3   long wavelengths (> orig / low_freq_factor) / factor, short ones (< orig /
 *            high_freq_factor) kept, a smooth blend between
 *   yarn     blend of interpolated (/ factor) and extrapolated frequencies by a linear ramp
 *            over [low, high] dims from beta_fast / beta_slow rotations; cos and sin are then
 *            multiplied by attention_factor (hp->rope_mscale, applied by the rope op)
 */
#include "model/hf_config.h"

#include <math.h>

static double correction_dim(double n_rot_turns, int d, double base, double orig) {
    return (d * log(orig / (n_rot_turns * 2 * M_PI))) / (2 * log(base));
}

void hearth_hparams_inv_freq(const hearth_hparams *hp, bool swa, float *inv_freq) {
    int d = hp->n_rot;
    /* only families with their own local RoPE (gemma3) give sliding layers plain frequencies */
    const hearth_arch_info *ai = hearth_arch_info_of(hp->arch);
    bool local = swa && ai && ai->rope_base_swa > 0;
    float base = local ? hp->rope_base_swa : hp->rope_base;
    hearth_rope_kind kind = local ? HEARTH_ROPE_DEFAULT : hp->rope_kind;
    float factor = hp->rope_factor;
    for (int i = 0; i < d / 2; i++) {
        float pos_freq = powf(base, (float)(2 * i) / (float)d);
        float f = 1.0f / pos_freq;
        switch (kind) {
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
            double lo = floor(correction_dim(hp->yarn_beta_fast, d, base, hp->rope_orig_ctx));
            double hi = ceil(correction_dim(hp->yarn_beta_slow, d, base, hp->rope_orig_ctx));
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
