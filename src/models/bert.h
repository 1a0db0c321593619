/*
 * bert.h - sentence embeddings from a BERT-style encoder checkpoint (Hugging Face safetensors
 * plus, when there, its sentence-transformers configuration).
 *
 * What loads: a folder with config.json (model_type "bert", "roberta" or "xlm-roberta",
 * absolute positions, hidden_act "gelu"; or "nomic_bert", the same layers with rotary
 * positions and SwiGLU; or "modernbert", modernbert.c; or "qwen3", a decoder used for
 * embeddings, or "gemma3_text" with bidirectional attention (EmbeddingGemma), qwen3_embed.c),
 * model.safetensors (f32, f16 or bf16; tensor names with or without the "bert." / "roberta."
 * prefix), tokenizer.json, and optionally modules.json with its Pooling module's config.json
 * (mean, CLS or last-token pooling), Dense modules (applied after the pooling) and a Normalize
 * module (L2 normalization), and sentence_bert_config.json's max_seq_length (the context; else
 * max_position_embeddings). Without modules.json the pooling is the mean and nothing is
 * normalized, as sentence-transformers does for a bare transformers checkpoint. Or one GGUF
 * file of general.architecture "bert", "nomic-bert", or "qwen3" with a pooling_type, as
 * llama.cpp's converter writes them (bert_gguf.c; normalized as llama.cpp returns them).
 *
 * The forward (bert.c) takes several sequences at once as one flat batch of tokens: every
 * matmul runs over all of them, attention is bidirectional within each sequence, and nothing
 * is kept between calls (no KV cache). The layout and the arithmetic are in bert.c's design
 * comment and docs/embeddings.md.
 *
 * Thread rule: load and destroy on one thread; hearth_bert_embed may be called from any thread
 * and is serialized inside (one forward at a time on the encoder's compute pool); the getters
 * and hearth_bert_tokenize read immutable state, any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_bert hearth_bert;

typedef enum {
    HEARTH_POOLING_MEAN = 0, /* mean of the sequence's token states */
    HEARTH_POOLING_CLS,      /* the first token's state */
    HEARTH_POOLING_LAST,     /* the last token's state */
    HEARTH_POOLING_COUNT,
} hearth_pooling;

typedef struct {
    int     n_threads;      /* compute threads; <= 0: all CPUs */
    int     device;         /* hearth_device (backend/backend.h): HEARTH_DEVICE_CPU (the default), CUDA
                             * (BERT, RoBERTa and XLM-R encoders on the GPU, bert_device.c; a load
                             * error naming why when it cannot), or AUTO (the GPU when there is one
                             * and the encoder runs there, else the CPU with a warning) */
    int64_t max_batch_tokens; /* tokens of one forward (longer batches are cut into several
                             * forwards, whole sequences each); <= 0: 8192 */
} hearth_bert_params;

hearth_bert_params hearth_bert_params_default(void);

/* Is path a folder that looks like an embedding checkpoint (config.json's model_type is one
 * hearth_bert_load takes; for "qwen3" and "gemma3_text", chat models as often,
 * sentence-transformers' modules.json must be there too), or a GGUF file of an embedding model
 * (bert, nomic-bert, modern-bert, gemma-embedding, qwen3 with a pooling_type)? Reads those
 * files only (a GGUF's header); false for anything else. */
bool hearth_bert_probe(const char *path);

/* Load the checkpoint folder at path. On failure returns the status (HEARTH_E_UNSUPPORTED for
 * a family or setting not handled, naming it), fills err (may be NULL), *out = NULL. */
hearth_status hearth_bert_load(const char *path, const hearth_bert_params *p, hearth_bert **out, hearth_err *err);
void          hearth_bert_destroy(hearth_bert *b); /* accepts NULL */

int64_t        hearth_bert_dim(const hearth_bert *b);        /* embedding size (after any Dense module) */
int32_t        hearth_bert_max_tokens(const hearth_bert *b); /* longest input, special tokens included */
int32_t        hearth_bert_n_vocab(const hearth_bert *b);
hearth_pooling hearth_bert_pooling(const hearth_bert *b);
bool           hearth_bert_normalizes(const hearth_bert *b);
const char    *hearth_bert_pooling_name(hearth_pooling p);  /* "mean", "cls", "last" */
/* A one-line description for logs and the CLI: "bert, 6 layers, 384 dims, f32, mean pooling,
 * normalized". Borrowed. */
const char    *hearth_bert_desc(const hearth_bert *b);
size_t         hearth_bert_weight_bytes(const hearth_bert *b);

/* Tokenize text[0..n) as the checkpoint's tokenizer does for sentence-transformers ([CLS] ...
 * [SEP] from the post-processor), into a malloc'ed *ids of *n_ids (caller frees). Not
 * truncated: compare *n_ids with hearth_bert_max_tokens, or call hearth_bert_truncate. */
hearth_status hearth_bert_tokenize(const hearth_bert *b, const char *text, size_t n, int32_t **ids, size_t *n_ids);
/* Cut ids (from hearth_bert_tokenize) to at most max tokens as the tokenizer's truncation does:
 * the text's tokens are cut and the closing special token is kept. Returns the new length. */
size_t hearth_bert_truncate(const hearth_bert *b, int32_t *ids, size_t n_ids, size_t max);

/* Embed n_seq token sequences: out[s * dim ..] = the pooled (and, as configured, normalized)
 * embedding of ids[s][0..n_ids[s]). Every sequence has 1..hearth_bert_max_tokens tokens of ids
 * in [0, n_vocab). Errors: HEARTH_E_INVALID (an empty or too-long sequence, an id out of range;
 * err names its index), HEARTH_E_NOMEM. */
hearth_status hearth_bert_embed(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t n_seq,
                                float *out, hearth_err *err);

/* x[0..dim) scaled to unit L2 norm (left alone when it is all zeros). */
void hearth_embed_normalize(float *x, int64_t dim);
