/*
 * hf_decode.c - tokenizers' decoders: a list of token strings -> a list of strings, chained,
 * then joined (Tokenizer::decode). Without a decoder the tokens are joined with spaces.
 *
 *   ByteLevel    each token whose characters are all in GPT-2's alphabet becomes its bytes,
 *                any other token stays as its UTF-8; the whole is then one string, decoded
 *                lossily (each maximal invalid UTF-8 subpart -> U+FFFD)
 *   Metaspace    replacement -> ' ', except that in the first token every replacement is
 *                dropped when prepend_scheme is not "never"
 *   ByteFallback runs of <0xXX> tokens become their bytes if those are valid UTF-8, else one
 *                U+FFFD per byte ("XX" as Rust's u8::from_str_radix reads it: "+F" is 15)
 *   Fuse         everything into one token
 *   Strip        up to `start` leading and `stop` trailing `content` characters per token
 *   WordPiece    tokens after the first: prefix removed, or a space added; then cleanup
 *                (" ." -> "." and the other English contractions tokenizers lists)
 *   Replace      pattern -> content in every token
 *   BPEDecoder   suffix -> " " (nothing in the last token)
 *
 * Pieces (hearth_tok_piece, the streaming decoder) run the same chain on one token as if it
 * stood in the middle of a text, without the lossy step, so that concatenated pieces give
 * bytes a UTF-8 check can hold back (decode.c); the chain stops at a decoder that joins the
 * tokens (Fuse, ByteLevel), since what follows works on the whole text, and a tokenizer
 * without decoder gets a space before every piece. The streaming decoder drops the first
 * piece's leading space where the chain would (tok->add_space_prefix, set by tok_json.c).
 * Where decode() replaces invalid UTF-8 by U+FFFD, streaming passes the bytes on.
 */
#include "tokenizer/hf_unicode.h"
#include "tokenizer/tok_pipe.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_buf  b;
    tok_str *v;   /* owned */
    size_t   n, cap;
} strlist;

static bool sl_add(strlist *l, size_t off) {
    if (!hearth_buf_reserve(&l->b, 0)) return false; /* never a NULL blob under an entry */
    if (l->n == l->cap && !hearth_buf_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 32))
        return false;
    l->v[l->n++] = (tok_str){(uint32_t)off, (uint32_t)(l->b.len - off)};
    return true;
}

static bool sl_push(strlist *l, const char *s, size_t n) {
    size_t off = l->b.len;
    return hearth_buf_put(&l->b, s, n) && sl_add(l, off);
}

static void sl_free(strlist *l) {
    hearth_buf_fini(&l->b);
    free(l->v);
}

bool tok_utf8_lossy(const char *s, size_t n, hearth_buf *out) {
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        size_t run = i;
        uint32_t cp;
        while (run < n) {
            size_t k = p[run] < 0x80 ? 1 : hearth_utf8_decode(p + run, n - run, &cp);
            if (!k) break;
            run += k;
        }
        if (!hearth_buf_put(out, s + i, run - i)) return false;
        if (run >= n) break;
        /* maximal subpart: a valid lead and the continuation bytes it allows */
        size_t k = 1;
        uint8_t b = p[run];
        size_t need = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3
                                             : b >= 0xF0 && b <= 0xF4 ? 4 : 1;
        for (; k < need && run + k < n; k++) {
            uint8_t c = p[run + k], lo = 0x80, hi = 0xBF;
            if (k == 1) {
                if (b == 0xE0) lo = 0xA0;
                if (b == 0xED) hi = 0x9F;
                if (b == 0xF0) lo = 0x90;
                if (b == 0xF4) hi = 0x8F;
            }
            if (c < lo || c > hi) break;
        }
        if (!hearth_buf_put(out, "\xEF\xBF\xBD", 3)) return false;
        i = run + k;
    }
    return true;
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The byte of a "<0xXX>" token, or -1. */
static int fallback_byte(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    if (s[3] == '+') return hexv(s[4]);
    int hi = hexv(s[3]), lo = hexv(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static const char *const cleanup_pairs[][2] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* WordPiece cleanup: each replacement over the whole token, in order (String::replace). */
static bool wp_cleanup(hearth_buf *t, hearth_buf *tmp) {
    for (size_t r = 0; r < sizeof cleanup_pairs / sizeof cleanup_pairs[0]; r++) {
        const char *from = cleanup_pairs[r][0], *to = cleanup_pairs[r][1];
        size_t fn = strlen(from), tn = strlen(to);
        if (!t->len || !memmem(t->p, t->len, from, fn)) continue;
        tmp->len = 0;
        for (size_t i = 0; i < t->len;) {
            const char *hit = memmem(t->p + i, t->len - i, from, fn);
            size_t e = hit ? (size_t)(hit - t->p) : t->len;
            if (!hearth_buf_put(tmp, t->p + i, e - i)) return false;
            if (!hit) break;
            if (!hearth_buf_put(tmp, to, tn)) return false;
            i = e + fn;
        }
        hearth_buf x = *t;
        *t = *tmp;
        *tmp = x;
    }
    return true;
}

/* One decoder over in -> out. base: the index of in's first token in the whole list (1 in
 * piece mode, so that no token counts as the first). */
static bool dec_one(const tok_dec *d, const strlist *in, strlist *out, size_t base, bool piece,
                    void *md) {
    hearth_buf t = {0}, tmp = {0};
    bool ok = true;
    if (d->kind == DEC_BYTELEVEL) {
        for (size_t i = 0; i < in->n && ok; i++) {
            const char *s = in->b.p + in->v[i].off;
            size_t n = in->v[i].len, j = 0;
            size_t mark = t.len;
            while (j < n && ok) {
                uint32_t cp;
                size_t k = hf_utf8_next(s + j, n - j, &cp);
                int b = tok_cp_to_byte(cp);
                if (b < 0) break;
                char c = (char)b;
                ok = hearth_buf_put(&t, &c, 1);
                j += k;
            }
            if (ok && j < n) { /* not all in the alphabet: the token's own UTF-8 */
                t.len = mark;
                ok = hearth_buf_put(&t, s, n);
            }
        }
        size_t off = out->b.len;
        ok = ok && (piece ? hearth_buf_put(&out->b, t.p, t.len) : tok_utf8_lossy(t.p, t.len, &out->b)) &&
             sl_add(out, off);
        goto done;
    }
    if (d->kind == DEC_BYTEFALLBACK) {
        for (size_t i = 0; i <= in->n && ok; i++) {
            int b = i < in->n ? fallback_byte(in->b.p + in->v[i].off, in->v[i].len) : -1;
            if (b >= 0) {
                char c = (char)b;
                ok = hearth_buf_put(&t, &c, 1);
                continue;
            }
            if (t.len) {
                size_t off = out->b.len;
                bool valid = true;
                for (size_t j = 0; j < t.len && valid;) {
                    uint32_t cp;
                    size_t k = hearth_utf8_decode((const uint8_t *)t.p + j, t.len - j, &cp);
                    valid = k > 0;
                    j += k;
                }
                if (valid || piece) ok = hearth_buf_put(&out->b, t.p, t.len);
                for (size_t j = 0; !valid && !piece && j < t.len && ok; j++)
                    ok = hearth_buf_put(&out->b, "\xEF\xBF\xBD", 3);
                ok = ok && sl_add(out, off);
                t.len = 0;
            }
            if (i < in->n && ok) ok = sl_push(out, in->b.p + in->v[i].off, in->v[i].len);
        }
        goto done;
    }
    if (d->kind == DEC_FUSE) {
        size_t off = out->b.len;
        for (size_t i = 0; i < in->n && ok; i++)
            ok = hearth_buf_put(&out->b, in->b.p + in->v[i].off, in->v[i].len);
        ok = ok && sl_add(out, off);
        goto done;
    }
    for (size_t i = 0; i < in->n && ok; i++) {
        const char *s = in->b.p + in->v[i].off;
        size_t n = in->v[i].len, idx = base + i, off = out->b.len;
        switch (d->kind) {
        case DEC_METASPACE:
            for (size_t j = 0; j < n && ok;) {
                if (j + d->str_n <= n && !memcmp(s + j, d->str, d->str_n)) {
                    if (!(idx == 0 && d->prepend != PREPEND_NEVER))
                        ok = hearth_buf_put(&out->b, " ", 1);
                    j += d->str_n;
                } else {
                    uint32_t cp;
                    size_t k = hf_utf8_next(s + j, n - j, &cp);
                    ok = hearth_buf_put(&out->b, s + j, k);
                    j += k;
                }
            }
            break;
        case DEC_STRIP: {
            size_t a = 0, b = n, cn = d->str_n;
            for (int k = 0; k < d->start && a + cn <= b && !memcmp(s + a, d->str, cn); k++)
                a += cn;
            for (int k = 0; k < d->stop && b >= a + cn && !memcmp(s + b - cn, d->str, cn); k++)
                b -= cn;
            ok = hearth_buf_put(&out->b, s + a, b - a);
            break;
        }
        case DEC_WORDPIECE:
            t.len = 0;
            if (idx != 0) {
                if (n >= d->str_n && !memcmp(s, d->str, d->str_n))
                    ok = hearth_buf_put(&t, s + d->str_n, n - d->str_n);
                else
                    ok = hearth_buf_put(&t, " ", 1) && hearth_buf_put(&t, s, n);
            } else {
                ok = hearth_buf_put(&t, s, n);
            }
            if (ok && d->cleanup) ok = wp_cleanup(&t, &tmp);
            ok = ok && hearth_buf_put(&out->b, t.p, t.len);
            break;
        case DEC_REPLACE:
            ok = tok_regex_replace(d->re, s, n, d->str, d->str_n, md, &out->b, NULL);
            break;
        case DEC_BPE: {
            bool last = !piece && i + 1 == in->n;
            for (size_t j = 0; j < n && ok;) {
                const char *hit = d->str_n ? memmem(s + j, n - j, d->str, d->str_n) : NULL;
                size_t e = hit ? (size_t)(hit - s) : n;
                ok = hearth_buf_put(&out->b, s + j, e - j);
                if (!hit) break;
                if (ok && !last) ok = hearth_buf_put(&out->b, " ", 1);
                j = e + d->str_n;
            }
            break;
        }
        default:
            ok = false;
        }
        ok = ok && sl_add(out, off);
    }
done:
    hearth_buf_fini(&t);
    hearth_buf_fini(&tmp);
    return ok;
}

/* Run the decoder chain over the token strings in *l; the joined result goes to *out. */
static bool run_chain(const tok_pipe *p, strlist *l, bool piece, hearth_buf *out) {
    strlist o = {0};
    void *md = tok_regex_md_create();
    bool ok = md != NULL;
    for (int k = 0; ok && k < p->n_decs; k++) {
        o.b.len = 0;
        o.n = 0;
        ok = dec_one(&p->decs[k], l, &o, piece ? 1 : 0, piece, md);
        strlist t = *l;
        *l = o;
        o = t;
        /* after Fuse / ByteLevel the rest of the chain sees the whole text as one token: a
         * piece stops here (a Strip of the text's start is the streaming decoder's job) */
        if (piece && (p->decs[k].kind == DEC_FUSE || p->decs[k].kind == DEC_BYTELEVEL)) break;
    }
    for (size_t i = 0; ok && i < l->n; i++) {
        if (!p->has_decoder && (i > 0 || piece)) ok = hearth_buf_put(out, " ", 1);
        ok = ok && hearth_buf_put(out, l->b.p + l->v[i].off, l->v[i].len);
    }
    sl_free(&o);
    tok_regex_md_free(md);
    return ok;
}

char *tok_pipe_decode(const hearth_tok *tok, const int32_t *ids, size_t n_ids, bool special) {
    const tok_pipe *p = tok->pipe;
    strlist l = {0};
    hearth_buf out = {0};
    bool ok = true;
    for (size_t i = 0; i < n_ids && ok; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= tok->n_vocab || tok->strs[id].len == 0) continue;
        if (!special && (tok->attr[id] & TOK_ATTR_SPECIAL)) continue;
        if (p->dec_text && p->dec_text[id].len)
            ok = sl_push(&l, p->dec_blob + p->dec_text[id].off, p->dec_text[id].len);
        else
            ok = sl_push(&l, tok->blob + tok->strs[id].off, tok->strs[id].len);
    }
    ok = ok && run_chain(p, &l, false, &out) && hearth_buf_put(&out, "", 1);
    sl_free(&l);
    if (!ok) {
        hearth_buf_fini(&out);
        return NULL;
    }
    return out.p;
}

bool tok_pipe_piece(const hearth_tok *tok, int32_t id, hearth_buf *out) {
    const tok_pipe *p = tok->pipe;
    strlist l = {0};
    bool ok = p->dec_text && p->dec_text[id].len
                  ? sl_push(&l, p->dec_blob + p->dec_text[id].off, p->dec_text[id].len)
                  : sl_push(&l, tok->blob + tok->strs[id].off, tok->strs[id].len);
    ok = ok && run_chain(p, &l, true, out);
    sl_free(&l);
    return ok;
}
