/*
 * lexer.c - cut a normalized template source into tokens, as jinja2's lexer does with
 * trim_blocks=True and lstrip_blocks=True.
 *
 * The rules mirror jinja2/lexer.py (3.1) closely, because whitespace is where renders differ:
 *   - Text runs up to the earliest "{{", "{%" or "{#". A tag may carry a sign after its opener:
 *     "-" strips all whitespace (Unicode, as str.rstrip) at the end of the text before it;
 *     otherwise, for "{%" and "{#" only and unless the sign is "+", lstrip_blocks removes the
 *     spaces and tabs between the last newline of that text and the tag - or the whole text if
 *     it has no newline and the previous match ended with a newline (or the template starts).
 *   - "-%}", "-}}", "-#}" swallow all following whitespace; "%}" and "#}" swallow one "\n"
 *     (trim_blocks); "+%}" and "+#}" swallow nothing; "}}" swallows nothing.
 *   - Inside a tag, the end delimiter is only recognized while no bracket is open (so
 *     `{{ {'a': {'b': 1}} }}` works), then whitespace, float, integer, name, string, operator
 *     are tried in that order, with jinja2's regular expressions for numbers.
 *   - Comments are dropped; {% raw %}...{% endraw %} becomes text (its endraw tag's sign
 *     strips or lstrips the raw text like any other tag).
 *   - String literals decode Python's escapes (\n, \xhh, \uXXXX, octal, ...); unknown escapes
 *     keep their backslash, as Python's unicode-escape codec does.
 */
#include "template/tmpl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_tmpl *t;
    const char  *s;
    size_t       n, pos;
    token       *v;
    size_t       nv, cap;
    bool         line_starting;
    char         bal[256]; /* expected closers of open brackets */
    int          n_bal;
    hearth_err  *err;
    hearth_status code;
    jmp_buf      jb;
} lexer;

_Noreturn __attribute__((format(printf, 4, 5))) static void lx_fail_code(lexer *lx, hearth_status code, size_t pos,
                                                                         const char *fmt, ...) {
    if (lx->err) {
        va_list ap;
        va_start(ap, fmt);
        char msg[200];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        hearth_err_set(lx->err, code, (int64_t)pos, "%s", msg);
        tmpl_linecol(lx->s, lx->n, pos, &lx->err->line, &lx->err->col);
    }
    lx->code = code;
    longjmp(lx->jb, 1);
}

#define lx_fail(lx, pos, ...) lx_fail_code(lx, HEARTH_E_FORMAT, pos, __VA_ARGS__)

static _Noreturn void lx_nomem(lexer *lx) {
    if (lx->err) hearth_err_set(lx->err, HEARTH_E_NOMEM, -1, "out of memory parsing the template");
    lx->code = HEARTH_E_NOMEM;
    longjmp(lx->jb, 2);
}

static void *lx_alloc(lexer *lx, size_t n) {
    void *p = hearth_arena_alloc(&lx->t->arena, n ? n : 1);
    if (!p) lx_nomem(lx);
    return p;
}

static const tstr *lx_str(lexer *lx, const char *p, size_t n) {
    tstr *s = tstr_new(&lx->t->arena, p, n);
    if (!s) lx_nomem(lx);
    return s;
}

static token *emit(lexer *lx, ttype type, size_t pos) {
    if (!hearth_arena_grow(&lx->t->arena, &lx->v, &lx->cap, lx->nv, lx->nv + 1, sizeof *lx->v, 256)) lx_nomem(lx);
    token *tk = &lx->v[lx->nv++];
    memset(tk, 0, sizeof *tk);
    tk->type = (uint8_t)type;
    tk->pos = (uint32_t)pos;
    return tk;
}

/* Length of the Unicode whitespace character at i, or 0. */
static size_t ws_at(const lexer *lx, size_t i) {
    if (i >= lx->n) return 0;
    size_t len;
    uint32_t cp = utf8_dec(lx->s + i, lx->n - i, &len);
    return py_isspace(cp) ? len : 0;
}

static size_t skip_ws(const lexer *lx, size_t i) {
    size_t k;
    while ((k = ws_at(lx, i)) > 0) i += k;
    return i;
}

static bool starts(const lexer *lx, size_t i, const char *lit) {
    size_t k = strlen(lit);
    return i <= lx->n && lx->n - i >= k && memcmp(lx->s + i, lit, k) == 0;
}

/* End of the whitespace-trimmed text[a..b) (Python's str.rstrip()). */
static size_t rstrip_end(const lexer *lx, size_t a, size_t b) {
    while (b > a) {
        size_t k = b - 1; /* back to the start of the last code point */
        while (k > a && ((unsigned char)lx->s[k] & 0xC0) == 0x80) k--;
        size_t len;
        uint32_t cp = utf8_dec(lx->s + k, b - k, &len);
        if (!py_isspace(cp) || k + len != b) break;
        b = k;
    }
    return b;
}

/* Emit text[a..b) before a tag whose sign is `sign`, applying "-" and lstrip_blocks. */
static void emit_text(lexer *lx, size_t a, size_t b, char sign, bool lstrip_ok) {
    if (sign == '-') {
        b = rstrip_end(lx, a, b);
    } else if (sign != '+' && lstrip_ok) {
        size_t l = b;
        while (l > a && lx->s[l - 1] != '\n') l--;
        if (l > a || lx->line_starting) {
            size_t k = l;
            while (k < b && (lx->s[k] == ' ' || lx->s[k] == '\t')) k++;
            if (k == b) b = l;
        }
    }
    if (b > a) {
        token *tk = emit(lx, T_TEXT, a);
        tk->s = lx_str(lx, lx->s + a, b - a);
    }
}

/* ---- numbers, names, strings ------------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(unsigned char c) {
    return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0x80;
}
static bool is_name_char(unsigned char c) { return is_name_start(c) || is_digit((char)c); }

/* (\d+_)*\d+ at i: end, or i when none. */
static size_t digits_us(const lexer *lx, size_t i) {
    size_t j = i;
    if (j >= lx->n || !is_digit(lx->s[j])) return i;
    while (j < lx->n && is_digit(lx->s[j])) j++;
    while (j + 1 < lx->n && lx->s[j] == '_' && is_digit(lx->s[j + 1])) {
        j++;
        while (j < lx->n && is_digit(lx->s[j])) j++;
    }
    return j;
}

/* jinja2's float_re at i: end, or i. */
static size_t match_float(const lexer *lx, size_t i) {
    if (i > 0 && lx->s[i - 1] == '.') return i;
    size_t j = digits_us(lx, i);
    if (j == i) return i;
    size_t k = j;
    if (k < lx->n && lx->s[k] == '.') {
        size_t f = digits_us(lx, k + 1);
        k = f > k + 1 ? f : j;
    }
    size_t e = k;
    if (e < lx->n && (lx->s[e] | 32) == 'e') {
        size_t x = e + 1;
        if (x < lx->n && (lx->s[x] == '+' || lx->s[x] == '-')) x++;
        size_t m = digits_us(lx, x);
        if (m > x) return m;
    }
    return k > j ? k : i;
}

static int digit_val(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 32) >= 'a' && (c | 32) <= 'f') return (c | 32) - 'a' + 10;
    return 99;
}

/* jinja2's integer_re at i: end (i when none); *val gets the value. */
static size_t match_int(lexer *lx, size_t i, int64_t *val) {
    const char *s = lx->s;
    int base = 10;
    size_t j = i, start;
    if (s[i] == '0' && i + 1 < lx->n && strchr("bBoOxX", s[i + 1])) {
        base = (s[i + 1] | 32) == 'b' ? 2 : (s[i + 1] | 32) == 'o' ? 8 : 16;
        j = i + 2;
        start = j;
        for (;;) {
            size_t k = j;
            if (k < lx->n && s[k] == '_') k++;
            if (k < lx->n && digit_val(s[k]) < base) j = k + 1;
            else break;
        }
        if (j == start) {
            base = 10; /* "0x" without digits: just the 0 */
            j = i;
        }
    }
    if (base == 10) {
        start = i;
        if (s[i] < '0' || s[i] > '9') return i;
        char lead = s[i];
        j = i + 1;
        for (;;) {
            size_t k = j;
            if (k < lx->n && s[k] == '_') k++;
            if (k < lx->n && (lead == '0' ? s[k] == '0' : is_digit(s[k]))) j = k + 1;
            else break;
        }
    } else {
        start = i + 2;
    }
    uint64_t v = 0;
    for (size_t k = start; k < j; k++) {
        if (s[k] == '_') continue;
        int d = digit_val(s[k]);
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) lx_fail(lx, i, "integer literal too large");
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (v > (uint64_t)INT64_MAX) lx_fail(lx, i, "integer literal too large");
    *val = (int64_t)v;
    return j;
}

/* Decode the body of a string literal s[a..b) (Python's unicode-escape rules). */
static const tstr *decode_string(lexer *lx, size_t a, size_t b) {
    char *out = lx_alloc(lx, b - a + 1); /* escapes never grow the text */
    size_t n = 0;
    for (size_t i = a; i < b;) {
        char c = lx->s[i];
        if (c != '\\') {
            out[n++] = c;
            i++;
            continue;
        }
        char e = lx->s[i + 1]; /* the scanner guarantees a character after '\' */
        size_t adv = 2;
        uint32_t cp = 0;
        int hex = 0;
        switch (e) {
        case '\n': i += 2; continue;
        case '\\': out[n++] = '\\'; i += 2; continue;
        case '\'': out[n++] = '\''; i += 2; continue;
        case '"': out[n++] = '"'; i += 2; continue;
        case 'a': out[n++] = '\a'; i += 2; continue;
        case 'b': out[n++] = '\b'; i += 2; continue;
        case 'f': out[n++] = '\f'; i += 2; continue;
        case 'n': out[n++] = '\n'; i += 2; continue;
        case 'r': out[n++] = '\r'; i += 2; continue;
        case 't': out[n++] = '\t'; i += 2; continue;
        case 'v': out[n++] = '\v'; i += 2; continue;
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        case 'N': lx_fail(lx, i, "\\N{...} escapes are not supported");
        default:
            if (e >= '0' && e <= '7') {
                adv = 1;
                for (int k = 0; k < 3 && i + adv < b && lx->s[i + adv] >= '0' && lx->s[i + adv] <= '7'; k++, adv++)
                    cp = cp * 8 + (uint32_t)(lx->s[i + adv] - '0');
                break;
            }
            out[n++] = '\\'; /* unknown escape: kept */
            i += 1;
            continue;
        }
        if (hex) {
            for (int k = 0; k < hex; k++) {
                int d = i + 2 + (size_t)k < b ? digit_val(lx->s[i + 2 + (size_t)k]) : 99;
                if (d > 15) lx_fail(lx, i, "truncated \\%c escape in a string literal", e);
                cp = cp * 16 + (uint32_t)d;
            }
            adv = 2 + (size_t)hex;
            if (cp > 0x10FFFF) lx_fail(lx, i, "illegal Unicode character in a string literal");
        }
        char enc[4];
        size_t k = utf8_enc(cp, enc);
        memcpy(out + n, enc, k); /* \x (4 bytes of source) -> at most 2; \u (6) -> 3; \U (10) -> 4 */
        n += k;
        i += adv;
    }
    return lx_str(lx, out, n);
}

/* ---- tags ---------------------------------------------------------------------------------- */

static void push_bal(lexer *lx, size_t pos, char closer) {
    if (lx->n_bal == (int)sizeof lx->bal) lx_fail_code(lx, HEARTH_E_LIMIT, pos, "template nested too deeply (brackets)");
    lx->bal[lx->n_bal++] = closer;
}

static void pop_bal(lexer *lx, size_t pos, char closer) {
    if (lx->n_bal == 0) lx_fail(lx, pos, "unexpected '%c'", closer);
    if (lx->bal[lx->n_bal - 1] != closer)
        lx_fail(lx, pos, "unexpected '%c', expected '%c'", closer, lx->bal[lx->n_bal - 1]);
    lx->n_bal--;
}

static const struct { const char *text; top op; } ops2[] = {
    {"//", OP_FDIV}, {"**", OP_POW}, {"==", OP_EQ}, {"!=", OP_NE}, {">=", OP_GE}, {"<=", OP_LE},
};

static top op1(char c) {
    switch (c) {
    case '+': return OP_ADD;
    case '-': return OP_SUB;
    case '*': return OP_MUL;
    case '/': return OP_DIV;
    case '%': return OP_MOD;
    case '~': return OP_TILDE;
    case '[': return OP_LBRACKET;
    case ']': return OP_RBRACKET;
    case '(': return OP_LPAREN;
    case ')': return OP_RPAREN;
    case '{': return OP_LBRACE;
    case '}': return OP_RBRACE;
    case '>': return OP_GT;
    case '<': return OP_LT;
    case '=': return OP_ASSIGN;
    case '.': return OP_DOT;
    case ':': return OP_COLON;
    case '|': return OP_PIPE;
    case ',': return OP_COMMA;
    case ';': return OP_SEMI;
    }
    return OP_NONE;
}

/* Tokens of a {{ }} (block = false) or {% %} (block = true) tag from lx->pos to its end. */
static void lex_tag(lexer *lx, bool block, size_t tag_pos) {
    lx->n_bal = 0;
    for (;;) {
        size_t i = lx->pos;
        if (i >= lx->n) lx_fail(lx, tag_pos, "unexpected end of template: the tag opened here is not closed");
        if (lx->n_bal == 0) {
            size_t end = 0;
            if (block && starts(lx, i, "+%}")) {
                end = i + 3;
            } else if (starts(lx, i, block ? "-%}" : "-}}")) {
                end = skip_ws(lx, i + 3);
            } else if (starts(lx, i, block ? "%}" : "}}")) {
                end = i + 2;
                if (block && end < lx->n && lx->s[end] == '\n') end++;
            }
            if (end) {
                emit(lx, block ? T_BLOCK_END : T_VAR_END, i);
                lx->pos = end;
                lx->line_starting = lx->s[end - 1] == '\n';
                return;
            }
        }
        size_t w = skip_ws(lx, i);
        if (w > i) {
            lx->pos = w;
            continue;
        }
        unsigned char c = (unsigned char)lx->s[i];
        size_t j = match_float(lx, i);
        if (j > i) {
            char tmp[128];
            size_t k = 0;
            for (size_t m = i; m < j && k + 1 < sizeof tmp; m++)
                if (lx->s[m] != '_') tmp[k++] = lx->s[m];
            tmp[k] = 0;
            token *tk = emit(lx, T_FLOAT, i);
            tk->f = strtod(tmp, NULL);
            lx->pos = j;
            continue;
        }
        if (is_digit((char)c)) {
            int64_t v = 0;
            j = match_int(lx, i, &v);
            token *tk = emit(lx, T_INT, i);
            tk->i = v;
            lx->pos = j;
            continue;
        }
        if (is_name_start(c)) {
            j = i + 1;
            while (j < lx->n && is_name_char((unsigned char)lx->s[j])) j++;
            token *tk = emit(lx, T_NAME, i);
            tk->s = lx_str(lx, lx->s + i, j - i);
            lx->pos = j;
            continue;
        }
        if (c == '\'' || c == '"') {
            j = i + 1;
            while (j < lx->n && lx->s[j] != (char)c) j += lx->s[j] == '\\' && j + 1 < lx->n ? 2 : 1;
            if (j >= lx->n) lx_fail(lx, i, "unexpected char '%c' (unterminated string)", c);
            token *tk = emit(lx, T_STRING, i);
            tk->s = decode_string(lx, i + 1, j);
            lx->pos = j + 1;
            continue;
        }
        top op = OP_NONE;
        size_t len = 1;
        for (size_t k = 0; k < sizeof ops2 / sizeof ops2[0]; k++)
            if (starts(lx, i, ops2[k].text)) {
                op = ops2[k].op;
                len = 2;
                break;
            }
        if (op == OP_NONE) op = op1((char)c);
        if (op == OP_NONE) {
            if (c >= 0x20 && c < 0x7f) lx_fail(lx, i, "unexpected char '%c'", c);
            lx_fail(lx, i, "unexpected char 0x%02x", c);
        }
        if (op == OP_LPAREN) push_bal(lx, i, ')');
        else if (op == OP_LBRACKET) push_bal(lx, i, ']');
        else if (op == OP_LBRACE) push_bal(lx, i, '}');
        else if (op == OP_RPAREN || op == OP_RBRACKET || op == OP_RBRACE) pop_bal(lx, i, (char)c);
        token *tk = emit(lx, T_OP, i);
        tk->op = (uint8_t)op;
        lx->pos = i + len;
    }
}

/* {% raw %} at i (sign already known): end of the opening tag, or 0 when it is not one. */
static size_t raw_open_end(const lexer *lx, size_t i) {
    size_t j = skip_ws(lx, i);
    if (!starts(lx, j, "raw")) return 0;
    j = skip_ws(lx, j + 3);
    if (starts(lx, j, "-%}")) return skip_ws(lx, j + 3);
    if (starts(lx, j, "%}")) return j + 2;
    return 0;
}

/* Find {% endraw %} from i: its start, sign, and the end of the whole match. */
static void lex_raw(lexer *lx, size_t open_pos) {
    if (lx->pos >= lx->n) return; /* as for comments: nothing after the tag is accepted */
    for (size_t i = lx->pos; i + 1 < lx->n; i++) {
        if (lx->s[i] != '{' || lx->s[i + 1] != '%') continue;
        size_t j = i + 2;
        char sign = 0;
        if (j < lx->n && (lx->s[j] == '-' || lx->s[j] == '+')) sign = lx->s[j++];
        j = skip_ws(lx, j);
        if (!starts(lx, j, "endraw")) continue;
        j = skip_ws(lx, j + 6);
        size_t end = 0;
        if (starts(lx, j, "+%}")) end = j + 3;
        else if (starts(lx, j, "-%}")) end = skip_ws(lx, j + 3);
        else if (starts(lx, j, "%}")) end = j + 2 + (j + 2 < lx->n && lx->s[j + 2] == '\n');
        if (!end) continue;
        emit_text(lx, lx->pos, i, sign, true);
        lx->pos = end;
        lx->line_starting = lx->s[end - 1] == '\n';
        return;
    }
    lx_fail(lx, open_pos, "missing end of raw directive");
}

static void lex_comment(lexer *lx, size_t open_pos) {
    size_t from = lx->pos;
    if (from >= lx->n) return; /* jinja2's lexer stops at the end of the source in any state */
    for (size_t q = from; q + 1 < lx->n; q++) {
        if (lx->s[q] != '#' || lx->s[q + 1] != '}') continue;
        size_t end;
        if (q > from && lx->s[q - 1] == '+') end = q + 2;
        else if (q > from && lx->s[q - 1] == '-') end = skip_ws(lx, q + 2);
        else end = q + 2 + (q + 2 < lx->n && lx->s[q + 2] == '\n');
        lx->pos = end;
        lx->line_starting = lx->s[end - 1] == '\n';
        return;
    }
    lx_fail(lx, open_pos, "missing end of comment tag");
}

static void lex_all(lexer *lx) {
    lx->line_starting = true;
    while (lx->pos < lx->n) {
        size_t a = lx->pos, i = a;
        char kind = 0;
        for (;;) {
            const char *p = memchr(lx->s + i, '{', lx->n - i);
            if (!p) break;
            i = (size_t)(p - lx->s);
            if (i + 1 < lx->n && (lx->s[i + 1] == '{' || lx->s[i + 1] == '%' || lx->s[i + 1] == '#')) {
                kind = lx->s[i + 1];
                break;
            }
            i++;
        }
        if (!kind) { /* the rest is text */
            token *tk = emit(lx, T_TEXT, a);
            tk->s = lx_str(lx, lx->s + a, lx->n - a);
            lx->pos = lx->n;
            break;
        }
        size_t j = i + 2;
        char sign = 0;
        if (j < lx->n && (lx->s[j] == '-' || lx->s[j] == '+')) sign = lx->s[j++];
        size_t raw_end = kind == '%' ? raw_open_end(lx, j) : 0;
        emit_text(lx, a, i, sign, kind != '{');
        lx->line_starting = false;
        if (raw_end) {
            lx->pos = raw_end;
            lx->line_starting = lx->s[raw_end - 1] == '\n';
            lex_raw(lx, i);
        } else if (kind == '#') {
            lx->pos = j;
            lex_comment(lx, i);
        } else {
            emit(lx, kind == '{' ? T_VAR_BEGIN : T_BLOCK_BEGIN, i);
            lx->pos = j;
            lex_tag(lx, kind == '%', i);
        }
    }
    emit(lx, T_EOF, lx->n);
}

hearth_status tmpl_lex(hearth_tmpl *t, token **out, size_t *n_out, hearth_err *err) {
    lexer *lx = hearth_arena_calloc(&t->arena, 1, sizeof *lx);
    if (!lx) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory parsing the template");
    lx->t = t;
    lx->s = t->src;
    lx->n = t->len;
    lx->err = err;
    if (setjmp(lx->jb)) return lx->code;
    lex_all(lx);
    *out = lx->v;
    *n_out = lx->nv;
    return HEARTH_OK;
}
