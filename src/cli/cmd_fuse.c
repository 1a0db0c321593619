/*
 * cmd_fuse.c - `hearth fuse MODEL --adapter DIR --out DIR|FILE.gguf`: merge a LoRA adapter into a
 * Hugging Face checkpoint (mlx-bun's `fuse`; lora/lora_fuse.c does the work) or a GGUF model
 * (llama.cpp's export-lora; lora/lora_fuse_gguf.c), so the result serves without --adapter.
 */
#include "cli/cli.h"
#include "lora/lora.h"
#include "model/model.h"
#include "store/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_fuse(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (FLAG("--adapter") || FLAG("--adapter-path")) { NEEDVAL(); adapter = val; }
        else if (FLAG("--out") || FLAG("--save-path")) { NEEDVAL(); out = val; }
        else if (FLAG("--model")) { NEEDVAL(); model = val; }
        else if (a[0] == '-') {
            cli_error("unknown flag %s (see `hearth help fuse`)", a);
            return 2;
        } else if (!model) {
            model = a;
        } else {
            cli_error("unexpected argument %s", a);
            return 2;
        }
    }
    if (!model || !adapter || !out) {
        cli_error("usage: hearth fuse MODEL --adapter DIR --out DIR|FILE.gguf");
        return 2;
    }
    int rc = 1;
    char *path = NULL;
    hearth_model *m = NULL;
    hearth_lora *lora = NULL;
    hearth_err err = {0};
    struct stat sb;
    if (hearth_hub_resolve(model, &path, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    bool gguf = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    if (!gguf && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        cli_error("%s is neither a Hugging Face checkpoint folder nor a GGUF file", path);
        goto done;
    }
    if (hearth_model_load(path, &m, &err)) {
        cli_error("cannot load %s: %s", path, err.msg);
        goto done;
    }
    if (hearth_lora_load(adapter, m, &lora, &err)) {
        cli_error("--adapter %s: %s", adapter, err.msg);
        goto done;
    }
    if (gguf ? hearth_lora_fuse_gguf(m, lora, out, &err) : hearth_lora_fuse(m, lora, path, out, &err)) {
        cli_error("fuse: %s", err.msg);
        goto done;
    }
    fprintf(stderr, "hearth: %s + %s (%d projections, rank %d) -> %s\n", path, adapter, lora->n_mats, lora->max_rank,
            out);
    rc = 0;
done:
    hearth_lora_release(lora);
    hearth_model_destroy(m);
    free(path);
    return rc;
}
