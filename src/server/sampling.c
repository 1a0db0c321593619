/* sampling.c - default sampling values by precedence (see sampling.h). */
#include "server/sampling.h"

hearth_sampler_params hearth_sampling_defaults(const hearth_server_params *p, const hearth_gen_defaults *gd,
                                               int32_t *max_tokens) {
    hearth_sampler_params s = hearth_sampler_params_default();
    /* built-in defaults */
    s.temperature = (float)HEARTH_DEFAULT_TEMPERATURE;
    s.top_p = 1.0f;
    s.top_k = 0;
    *max_tokens = 0;
    /* generation_config.json */
    if (gd) {
        if (gd->has_temperature) s.temperature = gd->temperature;
        if (gd->has_do_sample && !gd->do_sample) s.temperature = 0.0f;
        if (gd->has_top_p) s.top_p = gd->top_p;
        if (gd->has_top_k) s.top_k = gd->top_k;
        if (gd->has_min_p) s.min_p = gd->min_p;
        if (gd->has_repetition_penalty && gd->repetition_penalty > 0) s.repeat_penalty = gd->repetition_penalty;
        if (gd->has_max_new_tokens && gd->max_new_tokens > 0) *max_tokens = gd->max_new_tokens;
    }
    /* the server's flags (negative: unset) */
    if (p->temperature >= 0) s.temperature = (float)p->temperature;
    if (p->top_p >= 0) s.top_p = (float)p->top_p;
    if (p->top_k >= 0) s.top_k = p->top_k;
    if (p->max_tokens > 0) *max_tokens = p->max_tokens;
    return s;
}
