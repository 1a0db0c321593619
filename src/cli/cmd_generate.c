/*
 * cmd_generate.c - `hearth generate`: load a model, turn the prompt into tokens (verbatim with
 * --raw, else as one user message through the model's chat template), run one request through
 * the engine and stream the text (or ids) to stdout; timings go to stderr.
 */
#include "backend/backend.h"
#include "cli/chat.h"
#include "cli/cli.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "lora/lora.h"
#include "model/model.h"
#include "store/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *model, *prompt, *adapter;
    bool raw, ids, ignore_eos;
    long long max_tokens, threads, ctx;
    hearth_device device;
    hearth_sampler_params sp;
    cli_engine_flags ef;
} gen_opts;

/* Parse flags; returns 0 to go on, else an exit status. */
static int parse(int argc, char **argv, gen_opts *o) {
    const char *positional[2] = {0};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long long iv;
        double fv;
        int ef = cli_engine_flag(argc, argv, &i, &o->ef);
        if (ef == 0) ef = cli_run_flag(argc, argv, &i, &o->threads, &o->device, &o->ctx);
        if (ef < 0) return 2;
        if (ef > 0) continue;
        if (FLAG("--raw")) o->raw = true;
        else if (FLAG("--ids")) o->ids = true;
        else if (FLAG("--ignore-eos")) o->ignore_eos = true;
        else if (FLAG("--prompt") || FLAG("-p")) { NEEDVAL(); o->prompt = val; }
        else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--adapter") || FLAG("--adapter-path")) { NEEDVAL(); o->adapter = val; }
        else if (FLAG("--max-tokens")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 1 << 24, &o->max_tokens)) return 2;
        } else if (FLAG("--temperature") || FLAG("--temp")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0, 100, &fv)) return 2;
            o->sp.temperature = (float)fv;
        } else if (FLAG("--top-p")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0, 1, &fv)) return 2;
            o->sp.top_p = (float)fv;
        } else if (FLAG("--top-k")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, 1 << 24, &iv)) return 2;
            o->sp.top_k = (int32_t)iv;
        } else if (FLAG("--min-p")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0, 1, &fv)) return 2;
            o->sp.min_p = (float)fv;
        } else if (FLAG("--repeat-penalty")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0.01, 100, &fv)) return 2;
            o->sp.repeat_penalty = (float)fv;
        } else if (FLAG("--presence-penalty")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, -2, 2, &fv)) return 2;
            o->sp.presence_penalty = (float)fv;
        } else if (FLAG("--frequency-penalty")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, -2, 2, &fv)) return 2;
            o->sp.frequency_penalty = (float)fv;
        } else if (FLAG("--seed")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, INT64_MAX, &iv)) return 2;
            o->sp.seed = (uint64_t)iv;
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help generate')", a);
            return 2;
        } else if (n_pos < 2) {
            positional[n_pos++] = a;
        } else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    if (!o->model && n_pos > 0) o->model = positional[0];
    else if (o->model && n_pos > 0 && !o->prompt) o->prompt = positional[0];
    if (!o->prompt && n_pos > 1) o->prompt = positional[1];
    if (!o->model) {
        cli_error("no model given (usage: hearth generate [model] --prompt TEXT)");
        return 2;
    }
    if (!o->prompt) {
        cli_error("no prompt given (usage: hearth generate [model] --prompt TEXT)");
        return 2;
    }
    return cli_draft_flags_check(&o->ef.draft) ? 0 : 2;
}

/* The prompt as one user message through the model's chat template (add_generation_prompt
 * on), tokenized without a doubled BOS. Returns 0, or 1 after printing why not. */
static int chat_prompt(const hearth_model *m, const char *path, const char *prompt, int32_t **ids, size_t *n_ids) {
    int rc = 1;
    char *src = NULL, *msgs = NULL, *ctx = NULL, *text = NULL;
    size_t n_text = 0;
    if (!(src = cli_chat_template(m, path, false, NULL, 0))) {
        cli_error("the model %s has no chat template: pass --raw to feed the prompt verbatim", path);
        goto out;
    }
    msgs = cli_chat_user_message(prompt);
    ctx = msgs ? cli_chat_context(msgs, NULL, true, hearth_model_tok(m), NULL) : NULL;
    if (!ctx) {
        cli_error("out of memory");
        goto out;
    }
    if (cli_chat_render(src, ctx, &text, &n_text)) goto out;
    if (cli_chat_tokenize(hearth_model_tok(m), text, n_text, ids, n_ids)) {
        cli_error("cannot tokenize the prompt");
        goto out;
    }
    rc = 0;
out:
    free(text);
    free(ctx);
    free(msgs);
    free(src);
    return rc;
}

int cli_generate(int argc, char **argv) {
    gen_opts o = {.max_tokens = 256, .sp = hearth_sampler_params_default()};
    cli_engine_flags_init(&o.ef);
    int rc = parse(argc, argv, &o);
    if (rc) return rc;

    hearth_err err = {0};
    char *path = NULL;
    hearth_model *m = NULL, *draft = NULL;
    hearth_engine *e = NULL;
    hearth_request *req = NULL;
    hearth_lora *lora = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    rc = 1;
    if (hearth_hub_resolve(o.model, &path, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    if (hearth_model_load(path, &m, &err)) {
        cli_error("cannot load %s: %s", path, err.msg);
        goto out;
    }
    if (o.adapter && hearth_lora_load(o.adapter, m, &lora, &err)) {
        cli_error("--adapter %s: %s", o.adapter, err.msg);
        goto out;
    }
    const hearth_tok *tok = hearth_model_tok(m);
    if (o.raw) {
        if (hearth_tok_encode(tok, o.prompt, strlen(o.prompt), true, true, &ids, &n_ids)) {
            cli_error("cannot tokenize the prompt");
            goto out;
        }
    } else if (chat_prompt(m, path, o.prompt, &ids, &n_ids)) {
        goto out;
    }
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = (int)o.threads;
    ep.n_ctx = (int32_t)o.ctx;
    cli_engine_flags_apply(&o.ef, &ep);
    ep.ssd_model_path = path; /* its identity keys the disk tier (a hub blob's sha256, else a digest) */
    ep.model_path = path;     /* --kv-quant config reads its kv_config.json */
    ep.device = (int)o.device;
    if (cli_draft_apply(&o.ef.draft, &ep, &draft)) goto out;
    if (hearth_engine_create(m, &ep, &e, &err)) {
        cli_error("cannot run %s: %s", path, err.msg);
        goto out;
    }
    hearth_request_params rp = {.prompt = ids, .n_prompt = n_ids, .max_tokens = (int32_t)o.max_tokens,
                                .sampling = o.sp, .ignore_eog = o.ignore_eos, .lora = lora, .lora_id = lora ? 1 : 0};
    if (hearth_engine_submit(e, &rp, &req, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    hearth_tok_decoder dec;
    hearth_tok_decoder_init(&dec, tok, false);
    char buf[1024];
    hearth_event ev;
    bool first = true;
    for (;;) {
        hearth_request_next(req, &ev, -1);
        if (ev.kind == HEARTH_EV_DONE) break;
        if (o.ids) {
            printf(first ? "%d" : " %d", ev.token);
        } else {
            int n = hearth_tok_decoder_push(&dec, ev.token, buf, sizeof buf);
            if (n > 0) fwrite(buf, 1, (size_t)n, stdout);
        }
        first = false;
        fflush(stdout);
    }
    if (!o.ids) {
        int n = hearth_tok_decoder_flush(&dec, buf, sizeof buf);
        if (n > 0) fwrite(buf, 1, (size_t)n, stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
    if (ev.finish == HEARTH_FINISH_ERROR) {
        cli_error("%s", ev.msg);
        goto out;
    }
    double pf = ev.prefill_ms > 0 ? ev.n_prompt / (ev.prefill_ms / 1e3) : 0;
    double dc = ev.decode_ms > 0 && ev.n_generated > 1 ? (ev.n_generated - 1) / (ev.decode_ms / 1e3) : 0;
    char spec[96] = "";
    if (ep.spec.kind != HEARTH_DRAFT_NONE)
        snprintf(spec, sizeof spec, "; speculative: %d drafted, %d accepted", ev.n_drafted, ev.n_accepted);
    fprintf(stderr, "hearth: %d prompt tokens, %d generated (%s); prefill %.1f tok/s, decode %.1f tok/s%s\n",
            ev.n_prompt, ev.n_generated,
            ev.finish == HEARTH_FINISH_STOP ? "stop" : ev.finish == HEARTH_FINISH_LENGTH ? "length" : "cancelled", pf,
            dc, spec);
    rc = 0;
out:
    hearth_request_release(req);
    hearth_engine_destroy(e);
    hearth_lora_release(lora); /* after the engine's requests */
    hearth_model_destroy(draft); /* after the engine, which borrows it */
    hearth_model_destroy(m);
    free(ids);
    free(path);
    return rc;
}
