/*
 * tok_gguf.h - the GGUF front end of the tokenizer: reads the tokenizer.ggml.* metadata of an
 * open GGUF file into a hearth_tok_spec and builds the tokenizer (tokenizer/tokenizer.h).
 *
 * Keys read: tokenizer.ggml.model ("llama" -> SentencePiece BPE, "gpt2" -> byte-level BPE, "bert" ->
 * WordPiece, built by tok_gguf_wpm.c, "t5" -> Unigram, built by tok_gguf_ugm.c; other
 * models are HEARTH_E_UNSUPPORTED naming them), .pre, .tokens, .scores (float32 or int32),
 * .token_type, .merges, .bos_token_id / .eos_token_id / .eot_token_id / .unknown_token_id /
 * .padding_token_id, .fim_{pre,suf,mid,pad,rep,sep}_token_id (or the older .prefix_token_id,
 * .suffix_token_id, .middle_token_id), .add_bos_token, .add_eos_token, .add_space_prefix. Missing keys take
 * llama.cpp's defaults (SPM: bos 1, eos 2, unk 0, add_bos and add_space_prefix on; BPE: no
 * default ids, add_bos on only for the Llama-3 family of pre-tokenizers, pre "default" when
 * the key is absent).
 *
 * Thread rule: any thread; g is only read.
 */
#pragma once
#include "base/status.h"
#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

/* Build the tokenizer of g into *out (caller destroys with hearth_tok_destroy). On failure
 * returns the status, fills err (may be NULL) naming the key, and sets *out = NULL. */
hearth_status hearth_tok_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err);

/* The WordPiece tokenizer of tokenizer.ggml.model "bert" (tok_gguf_wpm.c); hearth_tok_from_gguf
 * calls it for that model. Same contract. */
hearth_status hearth_tok_wpm_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err);

/* The Unigram tokenizer of tokenizer.ggml.model "t5" (tok_gguf_ugm.c); hearth_tok_from_gguf calls
 * it for that model. Same contract. */
hearth_status hearth_tok_ugm_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err);
