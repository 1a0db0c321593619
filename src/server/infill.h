/*
 * infill.h - fill-in-the-middle prompts for code editors: the token sequence that asks a model
 * with FIM tokens to write the code between a prefix and a suffix, built the way llama-server's
 * /infill builds it (so a client tuned against llama-server sees the same prompt):
 *
 *   [extra context] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID
 *
 * where `prompt` is the text right before the cursor (llama.vim sends the current line's
 * start there) and the extra context is the repository-level pattern of Qwen2.5-Coder's
 * paper: FIM_REP "myproject\n", then per extra file FIM_SEP "<filename>\n" and its text (with
 * no FIM_SEP token, the separator text "\n\n--- snippet ---\n\n" instead), then FIM_SEP
 * "filename\n" for the file being edited (FIM_REP / FIM_SEP parts only when the vocab has
 * those tokens; the fixed names are llama-server's). With spm set the suffix part comes first
 * (FIM_SUF suffix FIM_PRE prefix prompt FIM_MID: the "SPM" order some models were trained on).
 *
 * Budget, as llama-server's: the prefix keeps its last 3 * (n_batch / 4) tokens, the suffix
 * its first n_batch / 4 - 2 - n_prompt (at least 0), the extra context its last
 * n_ctx - n_batch - 2 * n_predict tokens (n_predict -1: unbounded). BOS goes in when the vocab
 * adds one. Texts are tokenized without parsing special-token text (a prefix holding
 * "<|fim_middle|>" stays plain text); the prompt parses it, as llama-server does.
 *
 * Thread rule: pure; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

#define HEARTH_INFILL_BATCH 2048 /* n_batch of the budget (llama-server's default batch) */

/* One file of the extra context. */
typedef struct {
    const char *filename; /* NULL: "tmp" (llama-server's default) */
    const char *text;
    size_t      n_filename, n_text;
} hearth_infill_chunk;

typedef struct {
    const int32_t             *prefix, *suffix, *prompt; /* tokens */
    size_t                     n_prefix, n_suffix, n_prompt;
    const hearth_infill_chunk *extra;
    size_t                     n_extra;
    int32_t                    n_batch;   /* > 0 */
    int32_t                    n_ctx;
    int32_t                    n_predict; /* -1: unbounded */
    bool                       spm;       /* suffix first */
} hearth_infill_parts;

/* Does tok have the prefix, suffix and middle tokens? When not, why names the missing ones
 * ("no fill-in-the-middle prefix, suffix token"), NUL-terminated in why[cap]. */
bool hearth_infill_supported(const hearth_tok *tok, char *why, size_t cap);

/* Build the prompt into a malloc'ed *ids of *n_ids tokens (caller frees).
 * HEARTH_E_UNSUPPORTED when tok has no FIM prefix/suffix/middle token, HEARTH_E_INVALID on bad
 * arguments, HEARTH_E_LIMIT when a text is too long to tokenize, HEARTH_E_NOMEM. */
hearth_status hearth_infill_build(const hearth_tok *tok, const hearth_infill_parts *p, int32_t **ids,
                                  size_t *n_ids);
