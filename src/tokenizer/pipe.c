/*
 * pipe.c - encode through the tokenizer.json pipeline (tok_pipe.h), as tokenizers'
 * Tokenizer::encode does it, and the added-token matcher.
 *
 * Added tokens (AddedVocabulary::find_matches). All added tokens, special or not, sit in one
 * of two tries: the raw one (normalized = false: matched in the input text) and the
 * normalized one (matched in each normalized segment, with the normalizer applied to their
 * contents first). A scan finds leftmost-longest non-overlapping matches, as tokenizers'
 * Aho-Corasick automaton in LeftmostLongest mode, and then, per match:
 *   - a special token is skipped when parse_special is off (encode_special_tokens): its text
 *     stays ordinary text; the scan has moved past it all the same;
 *   - single_word: skipped when a word character (regex \w) touches it on either side;
 *   - lstrip / rstrip: the match grows over the whitespace before / after it (never back
 *     over an earlier match);
 * and the text between matches becomes the segments that go on down the pipeline.
 *
 *   "Hi<s> there"  ─raw─>  "Hi" | <s> | " there"  ─normalize each─> ... ─pre-tokenize─> pieces
 *
 * Post-processing (TemplateProcessing and friends, add_special only) wraps the ids of A (and
 * B) in the template's special-token ids; without add_special a pair is A followed by B.
 *
 * Work buffers are owned by the call: any number of threads may encode at once.
 */
#include "tokenizer/hf_unicode.h"
#include "tokenizer/tok_pipe.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* ------------------------------------------------------------------ the added-token tries */

static int32_t atrie_child(const tok_atrie *t, int32_t node, uint8_t b) {
    if (node == 0) return t->root[b];
    for (int32_t c = t->nodes[node].first_child; c >= 0; c = t->nodes[c].next_sibling)
        if (t->nodes[c].byte == b) return c;
    return -1;
}

static bool atrie_add(tok_atrie *t, const char *s, size_t n, int32_t rank) {
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)s[i];
        int32_t c = atrie_child(t, node, b);
        if (c < 0) {
            if (!hearth_buf_grow(&t->nodes, &t->cap_nodes, (size_t)t->n_nodes + 1, sizeof *t->nodes, 64)) return false;
            c = t->n_nodes++;
            t->nodes[c] = (tok_trie_node){-1, -1, -1, b};
            if (node == 0) {
                t->root[b] = c;
            } else {
                t->nodes[c].next_sibling = t->nodes[node].first_child;
                t->nodes[node].first_child = c;
            }
        }
        node = c;
    }
    /* two added tokens with one (normalized) text: tokenizers' automaton reports the first */
    if (t->nodes[node].rank < 0) t->nodes[node].rank = rank;
    return true;
}

static bool atrie_init(tok_atrie *t) {
    t->nodes = NULL;
    t->cap_nodes = 0;
    if (!hearth_buf_grow(&t->nodes, &t->cap_nodes, 1, sizeof *t->nodes, 64)) return false;
    t->nodes[0] = (tok_trie_node){-1, -1, -1, 0};
    t->n_nodes = 1;
    for (int i = 0; i < 256; i++) t->root[i] = -1;
    return true;
}

hearth_status tok_pipe_build_added(hearth_tok *tok, hearth_err *err) {
    tok_pipe *p = tok->pipe;
    hearth_buf nb = {0}, tmp = {0}, mid = {0}, dec = {0};
    void *md = tok_regex_md_create();
    hearth_status st = HEARTH_OK;
    if (!md || !atrie_init(&p->raw) || !atrie_init(&p->norm)) goto oom;
    for (int k = 0; k < p->n_added; k++) {
        const tok_added *a = &p->added[k];
        const char *s = tok->blob + tok->strs[a->id].off;
        size_t n = tok->strs[a->id].len;
        if (n == 0) continue;
        if (!a->normalized) {
            if (!atrie_add(&p->raw, s, n, k)) goto oom;
            continue;
        }
        bool cut;
        if (!tok_norm_apply(p->norms, p->n_norms, s, n, &nb, &tmp, &mid, md, &cut)) goto oom;
        if (nb.len && !atrie_add(&p->norm, nb.p, nb.len, k)) goto oom;
        if (nb.len == n && !memcmp(nb.p, s, n)) continue;
        if (!p->dec_text && !(p->dec_text = calloc((size_t)tok->n_vocab, sizeof *p->dec_text)))
            goto oom;
        p->dec_text[a->id] = (tok_str){(uint32_t)dec.len, (uint32_t)nb.len};
        if (!hearth_buf_put(&dec, nb.p, nb.len)) goto oom;
        tok->attr[a->id] = TOK_ATTR_USER; /* decoded and rendered like any added token */
    }
    p->dec_blob = dec.p;
    dec.p = NULL;
    goto done;
oom:
    st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
done:
    hearth_buf_fini(&nb);
    hearth_buf_fini(&tmp);
    hearth_buf_fini(&mid);
    hearth_buf_fini(&dec);
    tok_regex_md_free(md);
    return st;
}

void tok_pipe_destroy(tok_pipe *p) {
    if (!p) return;
    for (int i = 0; i < p->n_norms; i++) {
        free(p->norms[i].str);
        tok_regex_destroy(p->norms[i].re);
    }
    free(p->norms);
    for (int i = 0; i < p->n_pts; i++) tok_regex_destroy(p->pts[i].re);
    free(p->pts);
    free(p->model.prefix);
    free(p->model.suffix);
    free(p->model.edges);
    free(p->model.node_tok);
    free(p->model.uscores);
    for (int i = 0; i < p->post.n_single; i++) free(p->post.single[i].ids);
    for (int i = 0; i < p->post.n_pair; i++) free(p->post.pair[i].ids);
    free(p->post.single);
    free(p->post.pair);
    for (int i = 0; i < p->n_decs; i++) {
        free(p->decs[i].str);
        tok_regex_destroy(p->decs[i].re);
    }
    free(p->decs);
    free(p->added);
    free(p->dec_text);
    free(p->dec_blob);
    free(p->raw.nodes);
    free(p->norm.nodes);
    free(p);
}

/* ------------------------------------------------------------------ finding added tokens */

static bool is_word_cp(const char *s, size_t n) {
    uint32_t cp;
    hf_utf8_next(s, n, &cp);
    return hf_uni_flags(cp) & HFU_WORD;
}

static bool is_ws_at(const char *s, size_t n, size_t *k) {
    uint32_t cp;
    *k = hf_utf8_next(s, n, &cp);
    return hf_uni_flags(cp) & HFU_WS;
}

/* Cut s[0..n) at added tokens of trie t: appends (start, end, id or -1) triples. */
static bool find_added(const tok_pipe *p, const tok_atrie *t, const char *s, size_t n,
                       bool parse_special, const tok_plain *plain, tok_vec *segs) {
    size_t start_off = 0, pos = 0;
    const uint8_t *u = (const uint8_t *)s;
    while (pos < n) {
        /* leftmost-longest match at or after pos */
        size_t at = pos, len = 0;
        int32_t rank = -1;
        for (; at < n; at++) {
            int32_t node = t->root[u[at]];
            for (size_t q = at + 1; node >= 0; q++) {
                if (t->nodes[node].rank >= 0) {
                    rank = t->nodes[node].rank;
                    len = q - at;
                }
                if (q >= n) break;
                node = atrie_child(t, node, u[q]);
            }
            if (rank >= 0) break;
        }
        if (rank < 0) break;
        size_t ms = at, me = at + len;
        pos = me;
        const tok_added *a = &p->added[rank];
        if (a->special && (!parse_special || tok_plain_overlaps(plain, ms, me))) continue;
        if (a->single_word) {
            bool left_ok = ms == 0 || !is_word_cp(s + hf_utf8_prev(s, ms), ms - hf_utf8_prev(s, ms));
            bool right_ok = me == n || !is_word_cp(s + me, n - me);
            if (!left_ok || !right_ok) continue;
        }
        if (a->lstrip) {
            size_t b = ms;
            while (b > 0) {
                size_t pv = hf_utf8_prev(s, b), k;
                if (!is_ws_at(s + pv, b - pv, &k)) break;
                b = pv;
            }
            ms = b > start_off ? b : start_off;
        }
        if (a->rstrip) {
            size_t k;
            while (me < n && is_ws_at(s + me, n - me, &k)) me += k;
        }
        if (start_off < ms &&
            (!tok_vec_push(segs, (int32_t)start_off) || !tok_vec_push(segs, (int32_t)ms) ||
             !tok_vec_push(segs, -1)))
            return false;
        if (!tok_vec_push(segs, (int32_t)ms) || !tok_vec_push(segs, (int32_t)me) ||
            !tok_vec_push(segs, a->id))
            return false;
        start_off = me;
    }
    if (start_off < n &&
        (!tok_vec_push(segs, (int32_t)start_off) || !tok_vec_push(segs, (int32_t)n) ||
         !tok_vec_push(segs, -1)))
        return false;
    return true;
}

/* ------------------------------------------------------------------ encode */

typedef struct {
    hearth_buf    text;             /* the input, made valid UTF-8 */
    hearth_buf    norm, ntmp, nmid; /* a normalized segment and normalizer scratch */
    hearth_buf    buf;              /* bytes of the pieces */
    tok_model_work mw;           /* model scratch */
    tok_pieces cur, tmp;
    tok_vec    segs, nsegs;
    void      *md;
} pipe_work;

static void work_free(pipe_work *w) {
    hearth_buf_fini(&w->text);
    hearth_buf_fini(&w->norm);
    hearth_buf_fini(&w->ntmp);
    hearth_buf_fini(&w->nmid);
    hearth_buf_fini(&w->buf);
    tok_model_work_free(&w->mw);
    free(w->cur.v);
    free(w->tmp.v);
    tok_vec_free(&w->segs);
    tok_vec_free(&w->nsegs);
    tok_regex_md_free(w->md);
}

/* Pre-tokenize and model one normalized, token-free segment. */
static bool encode_segment(const hearth_tok *tok, pipe_work *w, const char *s, size_t n,
                           bool first, tok_vec *out) {
    const tok_pipe *p = tok->pipe;
    w->buf.len = 0;
    w->cur.n = 0;
    if (!hearth_buf_put(&w->buf, s, n) || !tok_pieces_push(&w->cur, 0, (uint32_t)n, first))
        return false;
    if (p->n_pts && !tok_pt_apply(p->pts, p->n_pts, &w->buf, &w->cur, &w->tmp, w->md))
        return false;
    for (size_t i = 0; i < w->cur.n; i++)
        if (!tok_model_encode(tok, &p->model, w->buf.p + w->cur.v[i].off, w->cur.v[i].len, out,
                              &w->mw))
            return false;
    return true;
}

/* One sequence: text[0..n) (valid UTF-8) -> ids. */
static bool encode_seq(const hearth_tok *tok, pipe_work *w, const char *text, size_t n,
                       bool parse_special, const tok_plain *plain, tok_vec *out) {
    const tok_pipe *p = tok->pipe;
    w->segs.n = 0;
    if (!find_added(p, &p->raw, text, n, parse_special, plain, &w->segs)) return false;
    for (size_t k = 0; k < w->segs.n; k += 3) {
        size_t s = (size_t)w->segs.v[k], e = (size_t)w->segs.v[k + 1];
        int32_t id = w->segs.v[k + 2];
        if (id >= 0) {
            if (!tok_vec_push(out, id)) return false;
            continue;
        }
        bool cut;
        if (!tok_norm_apply(p->norms, p->n_norms, text + s, e - s, &w->norm, &w->ntmp, &w->nmid,
                            w->md, &cut))
            return false;
        w->nsegs.n = 0;
        /* normalized offsets no longer map to the input's: a segment touching a plain range
         * takes no special tokens at all */
        bool ps = parse_special && !tok_plain_overlaps(plain, s, e);
        if (!find_added(p, &p->norm, w->norm.p, w->norm.len, ps, NULL, &w->nsegs)) return false;
        for (size_t j = 0; j < w->nsegs.n; j += 3) {
            size_t a = (size_t)w->nsegs.v[j], b = (size_t)w->nsegs.v[j + 1];
            int32_t nid = w->nsegs.v[j + 2];
            bool ok = nid >= 0 ? tok_vec_push(out, nid)
                               : encode_segment(tok, w, w->norm.p + a, b - a,
                                                s == 0 && !cut && a == 0, out);
            if (!ok) return false;
        }
    }
    return true;
}

static bool append_items(const tok_tmpl_item *items, int n, const tok_vec *seq, tok_vec *out) {
    for (int i = 0; i < n; i++) {
        if (items[i].seq < 0) {
            for (int32_t k = 0; k < items[i].n_ids; k++)
                if (!tok_vec_push(out, items[i].ids[k])) return false;
        } else {
            const tok_vec *v = &seq[items[i].seq];
            if (!tok_vec_reserve(out, out->n + v->n)) return false;
            if (v->n) memcpy(out->v + out->n, v->v, v->n * sizeof *v->v);
            out->n += v->n;
        }
    }
    return true;
}

hearth_status tok_pipe_encode(const hearth_tok *tok, const char *a, size_t na, const char *b,
                              size_t nb, bool pair, bool add_special, bool parse_special,
                              const tok_plain *plain, int32_t **ids, size_t *n_ids) {
    const tok_pipe *p = tok->pipe;
    pipe_work w = {0};
    tok_vec seq[2] = {{0}, {0}}, out = {0};
    hearth_status st = HEARTH_E_NOMEM;
    if (!(w.md = tok_regex_md_create())) goto done;
    for (int k = 0; k < (pair ? 2 : 1); k++) {
        const char *t = k ? b : a;
        size_t n = k ? nb : na;
        w.text.len = 0;
        if (!tok_utf8_lossy(t ? t : "", n, &w.text)) goto done;
        if (!tok_vec_reserve(&seq[k], n / 3 + 4)) goto done;
        /* plain ranges are offsets into a: valid UTF-8 keeps them (the lossy pass changes nothing) */
        const tok_plain *pl = k == 0 && w.text.len == n ? plain : NULL;
        if (!encode_seq(tok, &w, w.text.p ? w.text.p : "", w.text.len, parse_special, pl, &seq[k]))
            goto done;
    }
    if (add_special && p->has_post) {
        if (!append_items(pair ? p->post.pair : p->post.single,
                          pair ? p->post.n_pair : p->post.n_single, seq, &out))
            goto done;
    } else {
        tok_vec_free(&out);
        out = seq[0];
        seq[0] = (tok_vec){0};
        if (pair) {
            const tok_tmpl_item both[2] = {{1, NULL, 0}, {-1, NULL, 0}};
            if (!append_items(both, 1, seq, &out)) goto done;
        }
    }
    if (!tok_vec_reserve(&out, 1)) goto done; /* never a NULL array */
    *ids = out.v;
    *n_ids = out.n;
    out.v = NULL;
    st = HEARTH_OK;
done:
    tok_vec_free(&out);
    tok_vec_free(&seq[0]);
    tok_vec_free(&seq[1]);
    work_free(&w);
    return st;
}
