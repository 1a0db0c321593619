/*
 * spm_model.c - a SentencePiece tokenizer.model (a protobuf ModelProto) -> hearth_tok_spec ->
 * hearth_tok, for checkpoints that ship no tokenizer.json.
 *
 * The file is untrusted: it is read with the bounds-checked reader, one protobuf field at a
 * time (varint keys, wire types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32; groups
 * are refused), skipping fields hearth does not use. What is read (sentencepiece_model.proto):
 *
 *   ModelProto      1 pieces (repeated), 2 trainer_spec, 3 normalizer_spec
 *   SentencePiece   1 piece (string), 2 score (float), 3 type (NORMAL 1, UNKNOWN 2, CONTROL 3,
 *                   USER_DEFINED 4, UNUSED 5, BYTE 6; GGUF's token_type uses the same values)
 *   TrainerSpec     3 model_type (UNIGRAM 1 = the default, BPE 2, WORD 3, CHAR 4),
 *                   24 treat_whitespace_as_suffix, 35 byte_fallback, 40..43 unk / bos / eos /
 *                   pad id (defaults 0, 1, 2, -1)
 *   NormalizerSpec  1 name, 2 precompiled_charsmap, 3 add_dummy_prefix (default true),
 *                   4 remove_extra_whitespaces (default true), 5 escape_whitespaces (true)
 *
 * hearth runs what Llama, Mistral and Gemma ship: BPE models (the SPM kind of the tokenizer
 * core: merges by piece score, byte fallback to <0xXX> pieces) with identity normalization
 * (no character map), whitespace kept and escaped to U+2581, the dummy prefix as the file
 * says. Anything else (Unigram, WORD, CHAR models, a normalization rule or character map,
 * whitespace removal, whitespace as suffix) is HEARTH_E_UNSUPPORTED naming it; a malformed
 * file is HEARTH_E_FORMAT with the byte offset.
 */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/rd.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };
enum { MAX_PIECES = 1 << 24 };

static uint64_t varint(hearth_rd *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t b = hearth_rd_u8(r);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80) || r->failed) return v;
    }
    r->failed = true; /* more than 10 bytes */
    return 0;
}

/* One field: its number and wire type, and its value (varint / fixed) or payload (LEN). */
typedef struct {
    uint32_t       num;
    int            wt;
    uint64_t       v;
    const uint8_t *data;
    size_t         len;
} field;

/* Next field of r into f; false at the end or on a malformed field (r->failed then). */
static bool next_field(hearth_rd *r, field *f) {
    if (hearth_rd_left(r) == 0 || r->failed) return false;
    uint64_t key = varint(r);
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    if (f->num == 0 || key >> 32) r->failed = true;
    else if (f->wt == WT_VARINT) f->v = varint(r);
    else if (f->wt == WT_I64) f->v = hearth_rd_u64(r);
    else if (f->wt == WT_I32) f->v = hearth_rd_u32(r);
    else if (f->wt == WT_LEN) {
        uint64_t n = varint(r);
        if (n > hearth_rd_left(r)) r->failed = true;
        else f->len = (size_t)n, f->data = hearth_rd_take(r, (size_t)n);
    } else r->failed = true; /* groups (3, 4) and reserved types */
    return !r->failed;
}

typedef struct {
    hearth_span *tokens;
    float       *scores;
    int32_t     *types;
    int32_t      n;
    size_t       cap_tokens, cap_scores, cap_types; /* grown together, one element at a time */
    int32_t      model_type, unk_id, bos_id, eos_id, pad_id;
    bool         byte_fallback, suffix;
    bool         add_dummy_prefix, remove_ws, escape_ws, has_charsmap;
    char         norm_name[32];
} spm_model;

static hearth_status bad(hearth_err *err, const hearth_rd *top, const char *what) {
    return hearth_err_set(err, HEARTH_E_FORMAT, (int64_t)hearth_rd_pos(top), "tokenizer.model: malformed %s", what);
}

static hearth_status read_piece(spm_model *m, const field *pf, const hearth_rd *top, hearth_err *err) {
    if (m->n >= MAX_PIECES) return hearth_err_set(err, HEARTH_E_LIMIT, -1, "tokenizer.model has too many pieces");
    size_t need = (size_t)m->n + 1;
    if (!hearth_buf_grow(&m->tokens, &m->cap_tokens, need, sizeof *m->tokens, 1024) ||
        !hearth_buf_grow(&m->scores, &m->cap_scores, need, sizeof *m->scores, 1024) ||
        !hearth_buf_grow(&m->types, &m->cap_types, need, sizeof *m->types, 1024))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_span text = {NULL, 0};
    float score = 0;
    int32_t type = HEARTH_TOKTYPE_NORMAL;
    bool has_text = false;
    hearth_rd r = hearth_rd_init(pf->data, pf->len);
    field f;
    while (next_field(&r, &f)) {
        if (f.num == 1 && f.wt == WT_LEN) text = (hearth_span){(const char *)f.data, f.len}, has_text = true;
        else if (f.num == 2 && f.wt == WT_I32) {
            uint32_t u = (uint32_t)f.v;
            memcpy(&score, &u, 4);
        } else if (f.num == 3 && f.wt == WT_VARINT) type = (int32_t)f.v;
    }
    if (r.failed) return bad(err, top, "piece");
    if (!has_text || type < HEARTH_TOKTYPE_NORMAL || type > HEARTH_TOKTYPE_BYTE)
        return hearth_err_set(err, HEARTH_E_FORMAT, (int64_t)hearth_rd_pos(top), "tokenizer.model: piece %d has %s",
                              m->n, has_text ? "an unknown type" : "no text");
    m->tokens[m->n] = text;
    m->scores[m->n] = score;
    m->types[m->n] = type;
    m->n++;
    return HEARTH_OK;
}

static bool read_trainer(spm_model *m, const field *tf) {
    hearth_rd r = hearth_rd_init(tf->data, tf->len);
    field f;
    while (next_field(&r, &f)) {
        if (f.wt != WT_VARINT) continue;
        int32_t v = (int32_t)(uint32_t)f.v; /* int32 fields: negative ones are 10-byte varints */
        switch (f.num) {
        case 3: m->model_type = v; break;
        case 24: m->suffix = f.v != 0; break;
        case 35: m->byte_fallback = f.v != 0; break;
        case 40: m->unk_id = v; break;
        case 41: m->bos_id = v; break;
        case 42: m->eos_id = v; break;
        case 43: m->pad_id = v; break;
        default: break;
        }
    }
    return !r.failed;
}

static bool read_normalizer(spm_model *m, const field *nf) {
    hearth_rd r = hearth_rd_init(nf->data, nf->len);
    field f;
    while (next_field(&r, &f)) {
        if (f.num == 1 && f.wt == WT_LEN) {
            size_t n = f.len < sizeof m->norm_name - 1 ? f.len : sizeof m->norm_name - 1;
            memcpy(m->norm_name, f.data, n);
            m->norm_name[n] = 0;
        } else if (f.num == 2 && f.wt == WT_LEN) {
            m->has_charsmap = f.len > 0;
        } else if (f.wt == WT_VARINT && f.num >= 3 && f.num <= 5) {
            bool b = f.v != 0;
            if (f.num == 3) m->add_dummy_prefix = b;
            else if (f.num == 4) m->remove_ws = b;
            else m->escape_ws = b;
        }
    }
    return !r.failed;
}

static int32_t id_or_none(int32_t id, int32_t n) { return id >= 0 && id < n ? id : -1; }

hearth_status hearth_tok_from_spm_model(const void *data, size_t n, hearth_tok **out, hearth_err *err) {
    if (out) *out = NULL;
    if (!data || !out) return hearth_err_set(err, HEARTH_E_INVALID, -1, "no tokenizer.model");
    spm_model m = {.model_type = 1, .unk_id = 0, .bos_id = 1, .eos_id = 2, .pad_id = -1,
                   .add_dummy_prefix = true, .remove_ws = true, .escape_ws = true};
    hearth_status st = HEARTH_OK;
    hearth_rd r = hearth_rd_init(data, n);
    field f;
    while (next_field(&r, &f)) {
        if (f.num == 1 && f.wt == WT_LEN) {
            if ((st = read_piece(&m, &f, &r, err))) goto done;
        } else if (f.num == 2 && f.wt == WT_LEN) {
            if (!read_trainer(&m, &f)) {
                st = bad(err, &r, "trainer_spec");
                goto done;
            }
        } else if (f.num == 3 && f.wt == WT_LEN) {
            if (!read_normalizer(&m, &f)) {
                st = bad(err, &r, "normalizer_spec");
                goto done;
            }
        }
    }
    if (r.failed) {
        st = bad(err, &r, "field");
        goto done;
    }
    if (m.n == 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "tokenizer.model has no pieces");
        goto done;
    }
    static const char *const kinds[] = {"?", "Unigram", "BPE", "WORD", "CHAR"};
    const char *why = NULL;
    if (m.model_type != 2) why = "models other than BPE";
    else if (m.has_charsmap || (m.norm_name[0] && strcmp(m.norm_name, "identity"))) why = "normalization rules";
    else if (m.remove_ws) why = "remove_extra_whitespaces";
    else if (!m.escape_ws) why = "escape_whitespaces = false";
    else if (m.suffix) why = "treat_whitespace_as_suffix";
    if (why) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "tokenizer.model: %s (%s model, normalizer '%s') are not "
                            "supported; hearth runs BPE with identity normalization", why,
                            m.model_type >= 1 && m.model_type <= 4 ? kinds[m.model_type] : "unknown",
                            m.norm_name[0] ? m.norm_name : "(none)");
        goto done;
    }
    if (!m.byte_fallback) /* the core falls back to <0xXX> pieces whenever the vocab has them */
        for (int32_t i = 0; i < m.n && !st; i++)
            if (m.types[i] == HEARTH_TOKTYPE_BYTE)
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "tokenizer.model: byte pieces without byte_fallback");
    if (st) goto done;
    hearth_tok_spec spec = {
        .kind = HEARTH_TOK_SPM, .n_vocab = m.n, .tokens = m.tokens, .scores = m.scores, .token_types = m.types,
        .bos_id = id_or_none(m.bos_id, m.n), .eos_id = id_or_none(m.eos_id, m.n), .eot_id = -1,
        .unk_id = id_or_none(m.unk_id, m.n), .pad_id = id_or_none(m.pad_id, m.n),
        .add_bos = id_or_none(m.bos_id, m.n) >= 0, .add_eos = false, .add_space_prefix = m.add_dummy_prefix,
        .spm_library = true,
    };
    st = hearth_tok_create(&spec, out, err);
done:
    free(m.tokens);
    free(m.scores);
    free(m.types);
    return st;
}
