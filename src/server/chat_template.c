/*
 * chat_template.c - the server's use of template/: parse the model's chat template once at
 * start, render it per request.
 *
 * NOTE(server): the Jinja interpreter (template.h) is being written; until it lands this
 * file reports chat as unavailable, so /v1/chat/completions answers 501 with that message.
 */
#include "server/chat.h"
#include "template/template.h"

#include <stdio.h>

void hearth_chat_init(hearth_server *s) {
    s->tmpl = NULL;
    if (!hearth_model_chat_template(s->m))
        snprintf(s->tmpl_error, sizeof s->tmpl_error,
                 "the model '%.200s' has no chat template: use /v1/completions with a raw prompt", s->model_id);
    else
        snprintf(s->tmpl_error, sizeof s->tmpl_error,
                 "chat templates are not implemented in this hearth build yet: use /v1/completions");
}

void hearth_chat_fini(hearth_server *s) { s->tmpl = NULL; }

hearth_status hearth_chat_render(hearth_server *s, const char *ctx_json, size_t n, char **out, size_t *out_len,
                                 hearth_err *err) {
    (void)s;
    (void)ctx_json;
    (void)n;
    *out = NULL;
    *out_len = 0;
    return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "chat templates are not implemented yet");
}
