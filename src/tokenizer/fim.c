/*
 * fim.c - the fill-in-the-middle tokens of a vocabulary: prefix, suffix, middle, pad, repo and
 * file separator (tokenizer.h's hearth_tok_fim).
 *
 * A front end that knows the ids from the file (GGUF's tokenizer.ggml.fim_*_token_id keys)
 * passes them in the spec; every kind it leaves unset is then looked up by token text, the
 * way llama.cpp finds them in vocabularies converted without those keys and in
 * tokenizer.json files:
 *   prefix  <|fim_prefix|> <fim-prefix> <fim_prefix> <｜fim▁begin｜> <PRE> ▁<PRE>
 *           <|code_prefix|> <|prefix|>
 *   suffix  the same families' <|fim_suffix|> ... <｜fim▁hole｜> <SUF> ...
 *   middle  <|fim_middle|> ... <｜fim▁end｜> <MID> ...
 *   pad     <|fim_pad|> <fim-pad> <fim_pad> <PAD> [PAD]
 *   repo    <|fim_repo|> <|repo_name|> <fim-repo> <REPO> <reponame>
 *   sep     <|file_sep|>
 * The first name of a list that the vocab has wins (llama.cpp walks a hash map, so with two
 * spellings in one vocab its choice is unspecified; no known vocab has two). A token found by
 * name becomes a control token, as in llama.cpp, so prompts with its text in them and
 * detokenized output treat it as special; pad, repo and separator end generation (llama.cpp's
 * end-of-generation set holds them too).
 */
#include "tokenizer/tok_internal.h"

#include <string.h>

#define FIM_NAMES_MAX 8

/* U+FF5C FULLWIDTH VERTICAL LINE and U+2581 LOWER ONE EIGHTH BLOCK, for DeepSeek's and
 * CodeLlama's spellings. */
#define FW_BAR "\xEF\xBD\x9C"
#define LOW_BAR "\xE2\x96\x81"
#define DEEPSEEK(w) "<" FW_BAR "fim" LOW_BAR w FW_BAR ">"

static const char *const fim_names[HEARTH_TOK_FIM_COUNT][FIM_NAMES_MAX] = {
    [HEARTH_TOK_FIM_PRE] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", DEEPSEEK("begin"),
                            "<PRE>", LOW_BAR "<PRE>", "<|code_prefix|>", "<|prefix|>"},
    [HEARTH_TOK_FIM_SUF] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", DEEPSEEK("hole"),
                            "<SUF>", LOW_BAR "<SUF>", "<|code_suffix|>", "<|suffix|>"},
    [HEARTH_TOK_FIM_MID] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", DEEPSEEK("end"),
                            "<MID>", LOW_BAR "<MID>", "<|code_middle|>", "<|middle|>"},
    [HEARTH_TOK_FIM_PAD] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
    [HEARTH_TOK_FIM_REP] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
    [HEARTH_TOK_FIM_SEP] = {"<|file_sep|>"},
};

void tok_fim_init(hearth_tok *tok, const int32_t *given) {
    for (int k = 0; k < HEARTH_TOK_FIM_COUNT; k++) {
        int32_t id = given ? given[k] : -1;
        if (id < -1 || id >= tok->n_vocab) id = -1;
        for (int j = 0; id < 0 && j < FIM_NAMES_MAX && fim_names[k][j]; j++) {
            const char *s = fim_names[k][j];
            id = hearth_tok_find(tok, s, strlen(s));
            if (id >= 0) tok->attr[id] |= TOK_ATTR_CONTROL;
        }
        tok->fim_ids[k] = id;
        if (id >= 0 && k >= HEARTH_TOK_FIM_PAD) tok->attr[id] |= TOK_ATTR_EOG; /* llama.cpp stops on these */
    }
}

int32_t hearth_tok_fim(const hearth_tok *tok, hearth_tok_fim_kind kind) {
    if (!tok || (int)kind < 0 || kind >= HEARTH_TOK_FIM_COUNT) return -1;
    return tok->fim_ids[kind];
}
