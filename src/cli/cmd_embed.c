/*
 * cmd_embed.c - `hearth embed MODEL --text T [--text T2 ...]`: sentence embeddings from an
 * encoder checkpoint (models/bert.h), no server.
 *
 * The inputs are the --text values in order, or, with none, the lines of stdin (a trailing
 * newline and carriage return are dropped; empty lines are skipped, as there is nothing to
 * embed). All inputs go through the encoder in batches of --batch (the forward itself lays a
 * batch's sequences end to end). Output: one line per input of space-separated numbers, or with
 * --json one object {"model" (as given), "dim", "data": [{"index", "tokens", "embedding"}]}. --dimensions
 * N keeps the first N numbers and normalizes again (Matryoshka truncation, as the API's
 * `dimensions` does). An input longer than the model's limit is an error naming it, unless
 * --truncate cuts it. --device picks the CPU or the GPU (models/bert_device.c) as generate's does.
 */
#include "cli/cli.h"
#include "models/bert.h"
#include "store/hub.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_usage_embed[] =
    "usage: hearth embed MODEL [--text T ...] [flags]\n"
    "\n"
    "Sentence embeddings from an embedding model, one vector per input: a checkpoint folder\n"
    "(BERT, RoBERTa, XLM-R, NomicBERT, ModernBERT, Qwen3 or EmbeddingGemma safetensors with its\n"
    "sentence-transformers modules) or a GGUF file (bert, including RoBERTa and XLM-R,\n"
    "nomic-bert, modern-bert, gemma-embedding, or qwen3 with a pooling_type). See\n"
    "docs/embeddings.md.\n"
    "\n"
    "  --text, -t T          an input (repeatable); without any, each line of stdin is one\n"
    "  --instruct I          put I in front of every input (as written; some models want a\n"
    "                        task prefix such as \"query: \")\n"
    "  --json                print {\"model\", \"dim\", \"data\": [{\"index\", \"tokens\", \"embedding\"}]}\n"
    "                        instead of one line of numbers per input\n"
    "  --dimensions N        keep the first N numbers and normalize again (Matryoshka)\n"
    "  --truncate            cut inputs longer than the model's limit instead of failing\n"
    "  --batch N             inputs per forward (default 32)\n"
    "  --threads N           compute threads (default: all CPUs)\n"
    "  --device auto|cpu|cuda  where to compute (default auto: the GPU when hearth was built with\n"
    "                        CUDA, one is usable and the encoder runs there (BERT, RoBERTa, XLM-R),\n"
    "                        else the CPU)\n";

typedef struct {
    const char  *model, *instruct;
    const char **texts;
    size_t       n_texts, cap_texts;
    bool         json, truncate;
    long long    dims, batch, threads;
    hearth_device device;
} embed_opts;

static bool push_text(embed_opts *o, const char *t) {
    if (o->n_texts == o->cap_texts) {
        size_t cap = o->cap_texts ? o->cap_texts * 2 : 16;
        const char **grown = realloc(o->texts, cap * sizeof *grown);
        if (!grown) return false;
        o->texts = grown;
        o->cap_texts = cap;
    }
    o->texts[o->n_texts++] = t;
    return true;
}

static int parse(int argc, char **argv, embed_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (FLAG("--text") || FLAG("-t")) {
            NEEDVAL();
            if (!push_text(o, val)) {
                cli_error("out of memory");
                return 1;
            }
        } else if (FLAG("--instruct")) { NEEDVAL(); o->instruct = val; }
        else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--json")) o->json = true;
        else if (FLAG("--truncate")) o->truncate = true;
        else if (FLAG("--dimensions")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 1 << 20, &o->dims)) return 2;
        } else if (FLAG("--batch")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 4096, &o->batch)) return 2;
        } else if (FLAG("--threads") || FLAG("--device")) {
            if (cli_run_flag(argc, argv, &i, &o->threads, &o->device, NULL) < 0) return 2;
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help embed')", a);
            return 2;
        } else if (!o->model) o->model = a;
        else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    if (!o->model) {
        cli_error("embed needs a model (try 'hearth help embed')");
        return 2;
    }
    return 0;
}

/* The lines of stdin, each malloc'ed, into o->texts (and lines, to free). */
static int read_stdin(embed_opts *o, char ***lines, size_t *n_lines) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        char **grown = realloc(*lines, (*n_lines + 1) * sizeof *grown);
        char *copy = strdup(line);
        if (!grown || !copy || !push_text(o, copy)) {
            if (grown) *lines = grown;
            free(copy);
            free(line);
            cli_error("out of memory");
            return 1;
        }
        *lines = grown;
        (*lines)[(*n_lines)++] = copy;
    }
    free(line);
    return 0;
}

int cli_embed(int argc, char **argv) {
    embed_opts o = {.batch = 32};
    char **lines = NULL;
    size_t n_lines = 0;
    int rc = parse(argc, argv, &o);
    if (rc) goto done;
    rc = 1;
    if (o.n_texts == 0 && read_stdin(&o, &lines, &n_lines)) goto done;
    if (o.n_texts == 0) {
        cli_error("nothing to embed (give --text, or lines on stdin)");
        goto done;
    }
    hearth_err err = {0};
    char *path = NULL;
    hearth_bert *b = NULL;
    int32_t **ids = calloc(o.n_texts, sizeof *ids);
    size_t *n_ids = calloc(o.n_texts, sizeof *n_ids);
    float *vec = NULL;
    cJSON *root = NULL, *data = NULL;
    if (!ids || !n_ids) {
        cli_error("out of memory");
        goto out;
    }
    if (hearth_hub_resolve(o.model, &path, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    hearth_bert_params bp = hearth_bert_params_default();
    bp.n_threads = (int)o.threads;
    bp.device = (int)o.device;
    if (hearth_bert_load(path, &bp, &b, &err)) {
        cli_error("cannot load %s as an embedding model: %s", path, err.msg);
        goto out;
    }
    const int64_t dim = hearth_bert_dim(b);
    if (o.dims > dim) {
        cli_error("--dimensions %lld is more than the model's %lld", o.dims, (long long)dim);
        goto out;
    }
    const int64_t out_dim = o.dims ? o.dims : dim;
    const size_t max = (size_t)hearth_bert_max_tokens(b);
    for (size_t i = 0; i < o.n_texts; i++) {
        const char *t = o.texts[i];
        char *joined = NULL;
        if (o.instruct) {
            size_t a = strlen(o.instruct), c = strlen(t);
            if (!(joined = malloc(a + c + 1))) {
                cli_error("out of memory");
                goto out;
            }
            memcpy(joined, o.instruct, a);
            memcpy(joined + a, t, c + 1);
            t = joined;
        }
        hearth_status st = hearth_bert_tokenize(b, t, strlen(t), &ids[i], &n_ids[i]);
        free(joined);
        if (st) {
            cli_error("input %zu: cannot tokenize it (%s)", i, hearth_status_str(st));
            goto out;
        }
        if (n_ids[i] > max) {
            if (!o.truncate) {
                cli_error("input %zu has %zu tokens, more than the model's limit of %zu (--truncate cuts it)", i,
                          n_ids[i], max);
                goto out;
            }
            n_ids[i] = hearth_bert_truncate(b, ids[i], n_ids[i], max);
        }
    }
    if (!(vec = malloc(o.n_texts * (size_t)dim * sizeof *vec))) {
        cli_error("out of memory");
        goto out;
    }
    for (size_t s = 0; s < o.n_texts; s += (size_t)o.batch) {
        size_t n = o.n_texts - s < (size_t)o.batch ? o.n_texts - s : (size_t)o.batch;
        if (hearth_bert_embed(b, (const int32_t *const *)ids + s, n_ids + s, (int64_t)n, vec + s * (size_t)dim,
                              &err)) {
            cli_error("%s", err.msg);
            goto out;
        }
    }
    if (o.json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", o.model);
        cJSON_AddNumberToObject(root, "dim", (double)out_dim);
        data = cJSON_AddArrayToObject(root, "data");
    }
    for (size_t i = 0; i < o.n_texts; i++) {
        float *v = vec + i * (size_t)dim;
        if (o.dims) hearth_embed_normalize(v, out_dim);
        if (o.json) {
            cJSON *item = cJSON_CreateObject();
            cJSON_AddNumberToObject(item, "index", (double)i);
            cJSON_AddNumberToObject(item, "tokens", (double)n_ids[i]);
            cJSON *arr = cJSON_AddArrayToObject(item, "embedding");
            for (int64_t k = 0; k < out_dim; k++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[k]));
            cJSON_AddItemToArray(data, item);
        } else {
            for (int64_t k = 0; k < out_dim; k++) printf(k ? " %.9g" : "%.9g", (double)v[k]);
            putchar('\n');
        }
    }
    if (o.json) {
        char *text = cJSON_PrintUnformatted(root);
        if (!text) {
            cli_error("out of memory");
            goto out;
        }
        puts(text);
        free(text);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    cJSON_Delete(root);
    free(vec);
    for (size_t i = 0; ids && i < o.n_texts; i++) free(ids[i]);
    free(ids);
    free(n_ids);
    hearth_bert_destroy(b);
    free(path);
done:
    for (size_t i = 0; i < n_lines; i++) free(lines[i]);
    free(lines);
    free(o.texts);
    return rc;
}
