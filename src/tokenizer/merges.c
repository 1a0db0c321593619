/*
 * merges.c - the BPE merge table both front ends build and both merge loops read.
 *
 * (left id, right id) -> (rank, merged id), an open-addressing hash table with linear probing
 * over a power-of-two array at most half full, so a merge step is one probe on average. The
 * GGUF front end (bpe.c) keeps the first rank of a repeated pair (llama.cpp's map::emplace);
 * tokenizer.json (tok_json.c) the last (tokenizers' HashMap::insert): the caller says which.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>

#include "base/size.h"

uint32_t tok_hash_slot(uint64_t key, uint32_t mask) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & mask;
}

static uint64_t pair_key(int32_t l, int32_t r) { return ((uint64_t)(uint32_t)l << 32) | (uint32_t)r; }

bool tok_merges_init(hearth_tok *tok, size_t n_merges) {
    size_t cap, want; /* a power of two, at most half full, its mask a uint32_t */
    if (!hearth_mul_size(n_merges, 2, &want) || !hearth_grow_cap(0, want, sizeof *tok->merges, 64, &cap) ||
        cap > (size_t)1 << 31)
        return false;
    tok->merges = malloc(cap * sizeof *tok->merges);
    if (!tok->merges) return false;
    for (size_t i = 0; i < cap; i++) tok->merges[i].key = UINT64_MAX;
    tok->merge_mask = (uint32_t)(cap - 1);
    return true;
}

void tok_merges_add(hearth_tok *tok, int32_t l, int32_t r, int32_t rank, int32_t result,
                    bool keep_first) {
    uint64_t key = pair_key(l, r);
    for (uint32_t k = tok_hash_slot(key, tok->merge_mask);; k = (k + 1) & tok->merge_mask) {
        tok_merge_slot *s = &tok->merges[k];
        if (s->key == key && keep_first) return;
        if (s->key == key || s->key == UINT64_MAX) {
            *s = (tok_merge_slot){key, rank, result};
            return;
        }
    }
}

const tok_merge_slot *tok_merges_find(const hearth_tok *tok, int32_t l, int32_t r) {
    if (!tok->merges) return NULL;
    uint64_t key = pair_key(l, r);
    for (uint32_t i = tok_hash_slot(key, tok->merge_mask);; i = (i + 1) & tok->merge_mask) {
        const tok_merge_slot *s = &tok->merges[i];
        if (s->key == key) return s;
        if (s->key == UINT64_MAX) return NULL;
    }
}
