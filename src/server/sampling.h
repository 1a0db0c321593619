/*
 * sampling.h - the server's default sampling values for a request, from their sources in
 * precedence order: the server's flags (--temperature, --top-p, --top-k, --max-tokens), then the
 * model's generation_config.json (Hugging Face checkpoints; GGUF files have none), then hearth's
 * built-in defaults (temperature 0.7, top_p 1, top_k off, min_p off, repetition penalty off:
 * mlx-bun's and mlx_lm.server's). A request's own fields are applied on top by the dialect.
 *
 * generation_config's do_sample: false means greedy (transformers' rule), unless a flag sets
 * the temperature.
 *
 * Thread rule: pure function; any thread.
 */
#pragma once
#include "engine/sampler.h"
#include "model/hf_config.h"
#include "server/server.h"

#define HEARTH_DEFAULT_TEMPERATURE 0.7

/* The defaults for one request; *max_tokens gets the default completion cap (0 = none: the
 * dialect's own default applies). gd may be NULL (no generation_config). */
hearth_sampler_params hearth_sampling_defaults(const hearth_server_params *p, const hearth_gen_defaults *gd,
                                               int32_t *max_tokens);
