/*
 * model.h - a loaded model: hparams, bound weights, tokenizer, chat template.
 *
 * hearth_model_load opens a GGUF file, looks its architecture up in the arch table, reads the
 * hparams, binds every tensor the family needs by name (checking type and shape, so a file
 * with a missing or misshapen tensor fails at load with a message naming it), and builds the
 * tokenizer from the file's metadata. Weights stay in the read-only mapping; small vectors
 * (norms, biases) are converted to f32 copies.
 *
 * Thread rule: immutable after load; any thread may read it. Destroy after every user is done.
 */
#pragma once
#include "base/status.h"
#include "model/arch.h"
#include "model/hf_config.h"
#include "tokenizer/tokenizer.h"

typedef struct hearth_model hearth_model;

/* path: a .gguf file, or a Hugging Face checkpoint (a folder with config.json, *.safetensors,
 * tokenizer.json; or one of its .safetensors files), loaded by model_st.c. */
hearth_status hearth_model_load(const char *path, hearth_model **out, hearth_err *err);
void          hearth_model_destroy(hearth_model *m); /* accepts NULL */

const hearth_hparams *hearth_model_hparams(const hearth_model *m);
const hearth_tok     *hearth_model_tok(const hearth_model *m);
/* general.name, or the file name; never NULL. */
const char           *hearth_model_name(const hearth_model *m);
/* tokenizer.chat_template, or NULL when the file has none. NUL-terminated, owned by m. */
const char           *hearth_model_chat_template(const hearth_model *m);
/* Bytes of weights in the file (tensor data). */
size_t                hearth_model_weight_bytes(const hearth_model *m);
/* A short description of the quantization mix, e.g. "q4_1 (210), f32 (61), q8_0 (1)". */
const char           *hearth_model_quant_desc(const hearth_model *m);
/*
 * The checkpoint's generation defaults (generation_config.json; all has_ flags false for GGUF
 * files) and its end-of-sequence ids: generation_config's eos_token_id, config.json's and the
 * tokenizer's eos, unioned. Precedence for whoever builds a request: a value the request sets
 * wins, then a has_ value here, then the server's own default. The eos ids are also marked as
 * end of generation in the model's tokenizer (hearth_tok_is_eog), so the engine stops on them.
 */
const hearth_gen_defaults *hearth_model_gen_defaults(const hearth_model *m);
