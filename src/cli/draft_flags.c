/*
 * draft_flags.c - the speculative decoding flags of serve, generate and benchmark; see
 * draft_flags.h.
 */
#include "cli/draft_flags.h"
#include "cli/cli.h"
#include "store/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kinds hearth knows the names of but does not implement (mlx-bun's drafter families). */
#define KIND_REFUSED 100

void cli_draft_flags_init(cli_draft_flags *d) { *d = (cli_draft_flags){.kind = -1}; }

static int refuse_kind(const char *kind) {
    cli_error("--draft-kind %s is not implemented in hearth; use assistant, ngram or two-model", kind);
    return -1;
}

int cli_draft_flag(int argc, char **argv, int *i, cli_draft_flags *d) {
    const char *a = argv[*i];
    if (!strcmp(a, "--fixed-draft")) {
        d->fixed = true;
        return 1;
    }
    static const char *const names[] = {"--draft-model", "--draft-kind", "--num-draft-tokens", "--ngram-min",
                                        "--ngram-max"};
    size_t k = 0, n = 0;
    for (; k < sizeof names / sizeof names[0]; k++) {
        n = strlen(names[k]);
        if (!strncmp(a, names[k], n) && (a[n] == 0 || a[n] == '=')) break;
    }
    if (k == sizeof names / sizeof names[0]) return 0;
    const char *val = a[n] == '=' ? a + n + 1 : NULL;
    if (!val) {
        if (*i + 1 >= argc) {
            cli_error("%s needs a value", names[k]);
            return -1;
        }
        val = argv[++*i];
    }
    switch (k) {
    case 0:
        if (!*val) {
            cli_error("--draft-model needs a model (a path or a hub-cache query)");
            return -1;
        }
        d->model = val;
        return 1;
    case 1:
        if (!strcmp(val, "ngram")) d->kind = HEARTH_DRAFT_NGRAM;
        else if (!strcmp(val, "two-model")) d->kind = HEARTH_DRAFT_MODEL;
        else if (!strcmp(val, "assistant")) d->kind = HEARTH_DRAFT_ASSISTANT;
        else if (!strcmp(val, "dspark") || !strcmp(val, "deepspec")) return refuse_kind(val);
        else {
            cli_error("--draft-kind expects two-model, assistant or ngram (got \"%s\")", val);
            return -1;
        }
        return 1;
    case 2:
        d->n_draft_flag = names[k];
        return cli_parse_int(names[k], val, 1, 64, &d->n_draft) ? 1 : -1;
    default:
        d->ngram_flag = names[k];
        return cli_parse_int(names[k], val, 1, 64, k == 3 ? &d->ngram_min : &d->ngram_max) ? 1 : -1;
    }
}

bool cli_draft_flags_check(const cli_draft_flags *d) {
    if (d->ngram_min > 0 && d->ngram_max > 0 && d->ngram_min > d->ngram_max) {
        cli_error("--ngram-min (%lld) must not be larger than --ngram-max (%lld)", d->ngram_min, d->ngram_max);
        return false;
    }
    if ((d->kind == HEARTH_DRAFT_MODEL || d->kind == HEARTH_DRAFT_ASSISTANT) && !d->model) {
        cli_error("--draft-kind %s needs --draft-model MODEL", d->kind == HEARTH_DRAFT_MODEL ? "two-model" : "assistant");
        return false;
    }
    return true;
}

int cli_draft_apply(const cli_draft_flags *d, hearth_engine_params *ep, hearth_model **draft) {
    *draft = NULL;
    int kind = d->kind >= 0 ? d->kind : d->model ? HEARTH_DRAFT_MODEL : HEARTH_DRAFT_NONE;
    if (kind == HEARTH_DRAFT_NONE) {
        const char *f = d->n_draft_flag ? d->n_draft_flag : d->ngram_flag ? d->ngram_flag : d->fixed ? "--fixed-draft" : NULL;
        if (f) fprintf(stderr, "hearth: warning: %s without --draft-kind or --draft-model is ignored\n", f);
        return 0;
    }
    if (kind == HEARTH_DRAFT_NGRAM && d->model)
        fprintf(stderr, "hearth: warning: --draft-kind ngram drafts from the sequence itself: --draft-model %s is "
                        "not used\n", d->model);
    if (kind != HEARTH_DRAFT_NGRAM && d->ngram_flag)
        fprintf(stderr, "hearth: warning: %s applies to --draft-kind ngram only and is ignored\n", d->ngram_flag);
    ep->spec = (hearth_spec_params){.kind = (hearth_draft_kind)kind, .n_draft = (int32_t)d->n_draft,
                                    .fixed = d->fixed};
    if (kind == HEARTH_DRAFT_NGRAM) {
        ep->spec.ngram_min = (int32_t)d->ngram_min;
        ep->spec.ngram_max = (int32_t)d->ngram_max;
        return 0;
    }
    hearth_err err = {0};
    char *path = NULL;
    if (hearth_hub_resolve(d->model, &path, &err)) {
        cli_error("--draft-model: %s", err.msg);
        return 1;
    }
    if (hearth_model_load(path, draft, &err)) {
        cli_error("cannot load the draft model %s: %s", path, err.msg);
        free(path);
        return 1;
    }
    /* a Gemma 4 assistant checkpoint (config.json model_type gemma4_assistant) is kind assistant */
    bool assistant = hearth_model_hparams(*draft)->n_embd_backbone > 0;
    if (d->kind == HEARTH_DRAFT_MODEL && assistant) {
        cli_error("--draft-kind two-model: %s is a Gemma 4 assistant drafter, which drafts from the target's own "
                  "state; use --draft-kind assistant (or leave --draft-kind out)", path);
        free(path);
        hearth_model_destroy(*draft);
        *draft = NULL;
        return 1;
    }
    free(path);
    if (d->kind == -1 && assistant) ep->spec.kind = HEARTH_DRAFT_ASSISTANT;
    ep->spec.draft_model = *draft;
    return 0;
}

void cli_draft_describe(const hearth_engine *e, char *buf, size_t cap) {
    hearth_engine_info in;
    hearth_engine_info_get(e, &in);
    if (!in.spec_kind[0]) {
        snprintf(buf, cap, "off");
        return;
    }
    if (in.spec.kind == HEARTH_DRAFT_NGRAM)
        snprintf(buf, cap, "%s (%d drafts%s, n-grams %d..%d)", in.spec_kind, in.spec.n_draft,
                 in.spec.fixed ? " fixed" : "", in.spec.ngram_min, in.spec.ngram_max);
    else snprintf(buf, cap, "%s (%d drafts%s)", in.spec_kind, in.spec.n_draft, in.spec.fixed ? " fixed" : "");
}
