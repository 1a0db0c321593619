/*
 * chat_template.c - the server's use of template/: parse the model's chat template once at
 * start, render it per request (the parsed template is immutable, so every connection thread
 * renders it concurrently).
 */
#include "server/chat.h"
#include "base/log.h"
#include "template/template.h"

#include <stdio.h>
#include <string.h>

void hearth_chat_init(hearth_server *s) {
    s->tmpl = NULL;
    const char *src = s->tmpl_src ? s->tmpl_src : hearth_model_chat_template(s->m);
    const hearth_arch_info *ai = hearth_arch_info_of(hearth_model_hparams(s->m)->arch);
    s->tc_format = hearth_tc_detect(src, ai ? ai->gguf_name : NULL);
    s->rs_format = hearth_rs_detect(src);
    if (!src) {
        snprintf(s->tmpl_error, sizeof s->tmpl_error,
                 "the model '%.200s' has no chat template: use /v1/completions with a raw prompt", s->model_id);
        return;
    }
    hearth_err err = {0};
    if (hearth_tmpl_parse(src, strlen(src), &s->tmpl, &err)) {
        s->tmpl = NULL;
        snprintf(s->tmpl_error, sizeof s->tmpl_error,
                 "the chat template of '%.100s' does not parse (line %d, column %d: %.256s): use /v1/completions",
                 s->model_id, err.line, err.col, err.msg);
        hearth_log(HEARTH_LOG_WARN, "server: %s", s->tmpl_error);
    }
}

void hearth_chat_fini(hearth_server *s) {
    hearth_tmpl_destroy(s->tmpl);
    s->tmpl = NULL;
}

hearth_status hearth_chat_render(hearth_server *s, const char *ctx_json, size_t n, char **out, size_t *out_len,
                                 hearth_err *err) {
    return hearth_tmpl_render(s->tmpl, ctx_json, n, NULL, out, out_len, err);
}
