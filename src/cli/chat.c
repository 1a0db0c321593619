/* chat.c - the command line's chat-template plumbing; see chat.h. */
#include "cli/chat.h"
#include "cli/cli.h"
#include "template/template.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"

#define MAX_FILE_BYTES ((size_t)256 << 20)

char *cli_read_file(const char *what, const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_FILE_BYTES) {
        cli_error("%s %s: not a regular file of at most 256 MiB", what, path);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        cli_error("out of memory reading %s", path);
        goto out;
    }
    *n = fread(buf, 1, (size_t)st.st_size, f);
    if (*n != (size_t)st.st_size) {
        cli_error("%s %s: read error", what, path);
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[*n] = 0;
out:
    fclose(f);
    return buf;
}

static void sb_json_str(hearth_buf *b, const char *s, size_t n) {
    hearth_buf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            hearth_buf_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            hearth_buf_puts(b, esc);
        } else {
            hearth_buf_put(b, s + i, 1);
        }
    }
    hearth_buf_puts(b, "\"");
}

static void sb_token(hearth_buf *b, const char *key, const hearth_tok *tok, int32_t id) {
    if (id < 0) return; /* transformers leaves a token the tokenizer lacks out of the context */
    hearth_span t = hearth_tok_text(tok, id);
    hearth_buf_puts(b, ", \"");
    hearth_buf_puts(b, key);
    hearth_buf_puts(b, "\": ");
    sb_json_str(b, t.ptr, t.len);
}

char *cli_chat_context(const char *messages_json, const char *tools_json, bool add_generation_prompt,
                       const hearth_tok *tok, const char *kwargs_json) {
    hearth_buf b = {0};
    hearth_buf_puts(&b, "{\"messages\": ");
    hearth_buf_puts(&b, messages_json);
    hearth_buf_puts(&b, ", \"tools\": ");
    hearth_buf_puts(&b, tools_json ? tools_json : "null");
    hearth_buf_puts(&b, ", \"documents\": null, \"add_generation_prompt\": ");
    hearth_buf_puts(&b, add_generation_prompt ? "true" : "false");
    if (tok) {
        sb_token(&b, "bos_token", tok, hearth_tok_bos(tok));
        sb_token(&b, "eos_token", tok, hearth_tok_eos(tok));
    }
    if (kwargs_json) { /* splice the object's members: {"a": 1} -> , "a": 1 */
        const char *open = strchr(kwargs_json, '{'), *close = strrchr(kwargs_json, '}');
        if (open && close && close > open) {
            const char *a = open + 1;
            while (a < close && (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r')) a++;
            if (a < close) {
                hearth_buf_puts(&b, ", ");
                hearth_buf_put(&b, a, (size_t)(close - a));
            }
        }
    }
    hearth_buf_puts(&b, "}");
    return hearth_buf_take(&b); /* NULL when out of memory */
}

char *cli_chat_user_message(const char *prompt) {
    hearth_buf b = {0};
    hearth_buf_puts(&b, "[{\"role\": \"user\", \"content\": ");
    sb_json_str(&b, prompt, strlen(prompt));
    hearth_buf_puts(&b, "}]");
    return hearth_buf_take(&b); /* NULL when out of memory */
}

int cli_chat_render(const char *src, const char *ctx_json, char **out, size_t *out_len) {
    hearth_tmpl *t = NULL;
    hearth_err err;
    if (hearth_tmpl_parse(src, strlen(src), &t, &err)) {
        cli_error("the chat template does not parse (line %d, column %d): %s", err.line, err.col, err.msg);
        return 1;
    }
    hearth_status st = hearth_tmpl_render(t, ctx_json, strlen(ctx_json), NULL, out, out_len, &err);
    hearth_tmpl_destroy(t);
    if (st == HEARTH_OK) return 0;
    if (err.line > 0)
        cli_error("the chat template failed (line %d, column %d): %s", err.line, err.col, err.msg);
    else
        cli_error("the chat template failed: %s", err.msg);
    return 1;
}

hearth_status cli_chat_tokenize(const hearth_tok *tok, const char *text, size_t n, int32_t **ids, size_t *n_ids) {
    *ids = NULL;
    *n_ids = 0;
    int32_t bos = hearth_tok_bos(tok);
    bool add_bos = false;
    if (bos >= 0) { /* does the vocab add a BOS? the tokenizer answers for the empty text */
        int32_t *probe = NULL;
        size_t n_probe = 0;
        hearth_status st = hearth_tok_encode(tok, "", 0, true, false, &probe, &n_probe);
        if (st) return st;
        add_bos = n_probe > 0 && probe[0] == bos;
        free(probe);
        hearth_span bt = hearth_tok_text(tok, bos);
        if (add_bos && bt.len > 0 && n >= bt.len && memcmp(text, bt.ptr, bt.len) == 0) add_bos = false;
    }
    int32_t *body = NULL;
    size_t n_body = 0;
    hearth_status st = hearth_tok_encode(tok, text, n, false, true, &body, &n_body);
    if (st) return st;
    if (!add_bos) {
        *ids = body;
        *n_ids = n_body;
        return HEARTH_OK;
    }
    int32_t *all = malloc((n_body + 1) * sizeof *all);
    if (!all) {
        free(body);
        return HEARTH_E_NOMEM;
    }
    all[0] = bos;
    if (n_body) memcpy(all + 1, body, n_body * sizeof *all);
    free(body);
    *ids = all;
    *n_ids = n_body + 1;
    return HEARTH_OK;
}

/* tokenizer_config.json's chat_template: a string, or [{"name", "template"}] picked as
 * transformers picks (tool_use with tools, else default). */
static char *from_tokenizer_config(const char *path, bool with_tools) {
    size_t n;
    FILE *probe = fopen(path, "rb");
    if (!probe) return NULL;
    fclose(probe);
    char *text = cli_read_file("tokenizer_config.json", path, &n);
    if (!text) return NULL;
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    char *out = NULL;
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (cJSON_IsString(ct)) {
        out = strdup(ct->valuestring);
    } else if (cJSON_IsArray(ct)) {
        const char *pick = NULL, *def = NULL;
        const cJSON *it;
        cJSON_ArrayForEach(it, ct) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(it, "template");
            if (!cJSON_IsString(name) || !cJSON_IsString(tmpl)) continue;
            if (!strcmp(name->valuestring, "tool_use") && with_tools) pick = tmpl->valuestring;
            if (!strcmp(name->valuestring, "default")) def = tmpl->valuestring;
        }
        if (!pick) pick = def;
        if (pick) out = strdup(pick);
    }
    cJSON_Delete(root);
    return out;
}

char *cli_chat_template(const hearth_model *m, const char *model_path, bool with_tools, char *origin,
                        size_t origin_cap) {
    const char *gguf = m ? hearth_model_chat_template(m) : NULL;
    if (gguf) {
        if (origin) snprintf(origin, origin_cap, "the GGUF's tokenizer.chat_template");
        return strdup(gguf);
    }
    if (!model_path) return NULL;
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = slash ? (size_t)(slash - model_path) + 1 : 0;
    char path[4096];
    if (dir_len + 32 > sizeof path) return NULL;
    memcpy(path, model_path, dir_len);
    strcpy(path + dir_len, "chat_template.jinja");
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        size_t n;
        char *text = cli_read_file("chat template", path, &n);
        if (text && origin) snprintf(origin, origin_cap, "%s", path);
        return text;
    }
    strcpy(path + dir_len, "tokenizer_config.json");
    char *text = from_tokenizer_config(path, with_tools);
    if (text && origin) snprintf(origin, origin_cap, "%s", path);
    return text;
}
