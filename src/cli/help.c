/* help.c - `hearth help [verb]`: the usage text of every verb. */
#include "cli/cli.h"
#include "cli/engine_flags.h"

#include <stdio.h>
#include <string.h>

static const char usage_main[] =
    "hearth - a local LLM appliance for Linux\n"
    "\n"
    "usage: hearth <verb> [args]\n"
    "\n"
    "verbs:\n"
    "  serve [model]   the OpenAI-compatible HTTP server (bare `hearth`: the starter model)\n"
    "  generate, gen   one-shot generation from a prompt, no server\n"
    "  get ORG/NAME    download a model repo from the hub, verified and resumable\n"
    "  ls [query]      the models in the hub cache\n"
    "  scan            re-index the hub cache into the registry\n"
    "  gc              reclaim superseded snapshots and unused blobs\n"
    "  fit MODEL       will a model fit in memory here, at what context, how fast\n"
    "  template        render a chat template (the prompt a model sees), or its token ids\n"
    "  benchmark [model]  prefill and decode tok/s here, recorded in the evals database\n"
    "  evals           the recorded benchmark runs\n"
    "  perplexity MODEL FILE  a model's perplexity on a text, as llama.cpp measures it\n"
    "  embed MODEL     sentence embeddings of --text inputs or stdin lines (encoder models)\n"
    "  fuse MODEL --adapter DIR --out DIR  merge a LoRA adapter into a checkpoint (or a GGUF)\n"
    "  fetch-media URL a diagnostic: fetch an image or audio URL as the server would (the\n"
    "                  address guard, redirects, caps), and say what came back or why not\n"
    "  help [verb]     this text, or a verb's flags (also `hearth VERB --help`)\n"
    "  --version, -v   print the version\n"
    "\n"
    "A model is a path to a .gguf file or a substring of a repo id in the Hugging Face cache\n"
    "($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub).\n";

static const char usage_fuse[] =
    "usage: hearth fuse MODEL --adapter DIR --out DIR|FILE.gguf\n"
    "\n"
    "Merge a LoRA adapter into a model, each adapted weight W replaced by W + scale B A (PEFT's\n"
    "merge_and_unload, llama.cpp's export-lora). A Hugging Face checkpoint folder (path or\n"
    "hub-cache query) in f32, f16 or bf16: OUT, a folder, gets MODEL's files (config, tokenizer,\n"
    "templates) and one model.safetensors in the source dtypes. A .gguf file: OUT is the merged\n"
    "GGUF, MODEL's metadata and tensors with the adapted ones in F16 (F32/F16/BF16 ones keep\n"
    "their type). MLX-quantized checkpoints are not merged (serve them with --adapter).\n"
    "\n"
    "  --adapter DIR         the adapter (alias --adapter-path): PEFT or mlx-lm folder, GGUF LoRA\n"
    "  --out DIR|FILE        where the merged model goes (alias --save-path; a folder is created)\n";

static const char usage_generate[] =
    "usage: hearth generate [model] --prompt TEXT [flags]\n"
    "\n"
    "  --prompt, -p TEXT     the prompt (may also follow the model as a second positional)\n"
    "  --model MODEL         the model (path or hub-cache query), instead of the positional\n"
    "  --adapter DIR         apply a LoRA adapter (alias --adapter-path): a PEFT or mlx-lm folder,\n"
    "                        or a GGUF LoRA file (docs/server.md \"Adapters\")\n"
    "  --raw                 feed the prompt verbatim. Without it the prompt is one user message\n"
    "                        rendered with the model's chat template (add_generation_prompt on;\n"
    "                        `hearth template` shows the result)\n"
    "  --max-tokens N        completion cap (default 256)\n"
    "  --temperature, --temp T   0 = greedy (default 0)\n"
    "  --top-p P             nucleus sampling (default 1 = off)\n"
    "  --top-k K             keep the K most likely tokens (default 0 = off)\n"
    "  --min-p P             drop tokens below P x the top probability (default 0 = off)\n"
    "  --repeat-penalty R    llama.cpp-style repetition penalty (default 1 = off)\n"
    "  --presence-penalty F, --frequency-penalty F   OpenAI-style penalties (default 0)\n"
    "  --seed S              sampling seed (default 0); same seed, same tokens\n"
    "  --ids                 print the generated token ids instead of text\n"
    "  --threads N           compute threads (default: all CPUs)\n"
    "  --device auto|cpu|cuda  where to compute (default auto: the GPU when hearth was built with\n"
    "                        CUDA and one is usable, else the CPU)\n"
    "  --ctx N               context length (default min(training context, 4096))\n"
    "  --ignore-eos          keep generating past end-of-generation tokens\n"
    CLI_ENGINE_FLAGS_USAGE
    "\n"
    "Environment: HEARTH_KERNELS=ref|scalar|avx2|avx512 forces a kernel set (ref: the f32\n"
    "reference kernels, whose default numerics tier is ref); HEARTH_LOG=info|debug shows engine\n"
    "details.\n";

const char *cli_help_text(const char *verb) {
    if (!verb) return usage_main;
    if (!strcmp(verb, "serve")) return cli_usage_serve;
    if (!strcmp(verb, "generate") || !strcmp(verb, "gen")) return usage_generate;
    if (!strcmp(verb, "fuse")) return usage_fuse;
    if (!strcmp(verb, "scan")) return cli_usage_scan;
    if (!strcmp(verb, "ls")) return cli_usage_ls;
    if (!strcmp(verb, "get")) return cli_usage_get;
    if (!strcmp(verb, "gc")) return cli_usage_gc;
    if (!strcmp(verb, "fit")) return cli_usage_fit;
    if (!strcmp(verb, "template")) return cli_usage_template;
    if (!strcmp(verb, "benchmark") || !strcmp(verb, "bench")) return cli_usage_benchmark;
    if (!strcmp(verb, "evals")) return cli_usage_evals;
    if (!strcmp(verb, "perplexity") || !strcmp(verb, "ppl")) return cli_usage_perplexity;
    if (!strcmp(verb, "embed")) return cli_usage_embed;
    if (!strcmp(verb, "fetch-media")) return cli_usage_fetch_media;
    return NULL;
}

int cli_help(int argc, char **argv) {
    const char *text = cli_help_text(argc > 1 ? argv[1] : NULL);
    if (!text) {
        cli_error("no such verb '%s' (try 'hearth help')", argv[1]);
        return 2;
    }
    fputs(text, stdout);
    return 0;
}
