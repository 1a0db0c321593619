/*
 * cmd_template.c - `hearth template`: render a chat template the way transformers'
 * apply_chat_template does and print the prompt (or, with a model, its token ids). The
 * debugging tool for "why does the model see this", and what the template conformance suite
 * (tests/e2e/test_templates.py) drives against Python jinja2.
 *
 * The output is the rendered text byte for byte, with no newline added; --ids prints the ids
 * separated by spaces and a newline.
 */
#include "cli/chat.h"
#include "cli/cli.h"
#include "model/model.h"
#include "store/hub.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_usage_template[] =
    "usage: hearth template [MODEL] [--template FILE] --messages FILE [--tools FILE]\n"
    "                       [--no-generation-prompt] [--kwargs JSON] [--ids]\n"
    "\n"
    "Render a chat template as transformers' apply_chat_template does (jinja2 with trim_blocks,\n"
    "lstrip_blocks, loop controls, raise_exception, strftime_now and transformers' tojson) and\n"
    "print the prompt exactly, without an added newline.\n"
    "\n"
    "  MODEL                  a .gguf path or hub-cache query: its tokenizer.chat_template (else\n"
    "                         chat_template.jinja or tokenizer_config.json beside the file), its\n"
    "                         bos_token and eos_token\n"
    "  --template FILE        render this template file instead (no model needed)\n"
    "  --messages FILE        a JSON array of messages ({\"role\", \"content\", \"tool_calls\", ...})\n"
    "  --tools FILE           a JSON array of tool schemas (default: tools is none)\n"
    "  --kwargs JSON          a JSON object of extra variables, e.g. '{\"enable_thinking\": false}';\n"
    "                         they override the defaults (with --template alone, pass bos_token\n"
    "                         and eos_token here)\n"
    "  --no-generation-prompt add_generation_prompt=false (default true)\n"
    "  --ids                  print the token ids of the prompt instead (needs MODEL): special\n"
    "                         tokens parsed, a BOS added when the vocab wants one and the prompt\n"
    "                         does not already start with it\n"
    "\n"
    "The template sees messages, tools, documents (none), add_generation_prompt, the special\n"
    "tokens, then the kwargs. A template that raises (raise_exception, an undefined attribute of\n"
    "an undefined value, ...) exits with status 1 and the message and position on stderr.\n";

typedef struct {
    const char *model, *template_path, *messages_path, *tools_path, *kwargs;
    bool        no_gen_prompt, ids;
} tmpl_opts;

static int parse(int argc, char **argv, tmpl_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, "--template")) dst = &o->template_path;
        else if (!strcmp(a, "--messages")) dst = &o->messages_path;
        else if (!strcmp(a, "--tools")) dst = &o->tools_path;
        else if (!strcmp(a, "--kwargs")) dst = &o->kwargs;
        else if (!strcmp(a, "--model")) dst = &o->model;
        else if (!strcmp(a, "--no-generation-prompt")) o->no_gen_prompt = true;
        else if (!strcmp(a, "--ids")) o->ids = true;
        else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help template')", a);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
        if (dst) {
            if (i + 1 >= argc) {
                cli_error("%s needs a value", a);
                return 2;
            }
            *dst = argv[++i];
        }
    }
    if (!o->messages_path) {
        cli_error("--messages FILE is required (usage: hearth template [MODEL] [--template FILE] --messages FILE)");
        return 2;
    }
    if (!o->model && !o->template_path) {
        cli_error("give a MODEL or --template FILE");
        return 2;
    }
    if (o->ids && !o->model) {
        cli_error("--ids needs a MODEL (its tokenizer)");
        return 2;
    }
    return 0;
}

/* Is text JSON of the wanted type (cJSON_IsArray / cJSON_IsObject)? Prints why not. */
static bool check_json(const char *what, const char *text, size_t n, cJSON_bool (*is)(const cJSON *),
                       const char *type) {
    cJSON *v = cJSON_ParseWithLength(text, n);
    bool ok = v && is(v);
    if (!v) cli_error("%s is not valid JSON", what);
    else if (!ok) cli_error("%s must be a JSON %s", what, type);
    cJSON_Delete(v);
    return ok;
}

int cli_template(int argc, char **argv) {
    tmpl_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    rc = 1;
    char *messages = NULL, *tools = NULL, *src = NULL, *ctx = NULL, *out = NULL, *path = NULL;
    hearth_model *m = NULL;
    int32_t *ids = NULL;
    size_t n, out_len = 0, n_ids = 0;
    hearth_err err;
    if (!(messages = cli_read_file("--messages", o.messages_path, &n))) goto done;
    if (!check_json("--messages", messages, n, cJSON_IsArray, "array of messages")) goto done;
    if (o.tools_path) {
        if (!(tools = cli_read_file("--tools", o.tools_path, &n))) goto done;
        if (!check_json("--tools", tools, n, cJSON_IsArray, "array of tools")) goto done;
    }
    if (o.kwargs && !check_json("--kwargs", o.kwargs, strlen(o.kwargs), cJSON_IsObject, "object")) {
        rc = 2;
        goto done;
    }
    if (o.model) {
        if (hearth_hub_resolve(o.model, &path, &err)) {
            cli_error("%s", err.msg);
            goto done;
        }
        if (hearth_model_load(path, &m, &err)) {
            cli_error("cannot load %s: %s", path, err.msg);
            goto done;
        }
    }
    if (o.template_path) {
        if (!(src = cli_read_file("--template", o.template_path, &n))) goto done;
    } else if (!(src = cli_chat_template(m, path, tools != NULL, NULL, 0))) {
        cli_error("%s has no chat template (no tokenizer.chat_template, chat_template.jinja or "
                  "tokenizer_config.json): pass --template FILE",
                  path);
        goto done;
    }
    ctx = cli_chat_context(messages, tools, !o.no_gen_prompt, m ? hearth_model_tok(m) : NULL, o.kwargs);
    if (!ctx) {
        cli_error("out of memory");
        goto done;
    }
    if (cli_chat_render(src, ctx, &out, &out_len)) goto done;
    if (o.ids) {
        if (cli_chat_tokenize(hearth_model_tok(m), out, out_len, &ids, &n_ids)) {
            cli_error("cannot tokenize the rendered prompt");
            goto done;
        }
        for (size_t i = 0; i < n_ids; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else {
        fwrite(out, 1, out_len, stdout);
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    free(ids);
    free(out);
    free(ctx);
    free(src);
    free(tools);
    free(messages);
    hearth_model_destroy(m);
    free(path);
    return rc;
}
