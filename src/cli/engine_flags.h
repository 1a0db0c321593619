/*
 * engine_flags.h - the engine's levers on the command line, shared by `hearth serve` and
 * `hearth generate` (docs/engine.md):
 *
 *   --batch N (--decode-concurrency N)   sequences per step (default 8; 1 = strictly serial)
 *   --prompt-cache GB                    unreferenced cached KV kept (default 8; 0 disables)
 *   --state-snapshots N                  hybrid models: state snapshots for prefix hits (default
 *                                        auto, engine.h state_snaps)
 *   --kv-budget GB                       the KV pool's size (default: from the memory budget)
 *   --memory-budget GB                   weights + KV + transients (default 0.75 x RAM)
 *   --paged-kv                           a no-op (the pool is always paged; seed command lines work)
 *   --paged-kv-block-size N              tokens per KV block (default 16)
 *   --ssd-cache DIR                      the prompt cache's disk tier (default off)
 *   --ssd-cache-max GB                   its files at most (default 32)
 *   --ssd-demote-idle SEC                cached blocks idle this long go to disk (default 300;
 *                                        0 never)
 *   --ssd-cache-verify                   check every restored block's full checksum
 *
 * The three --ssd-cache-* / --ssd-demote-idle flags without --ssd-cache print one warning and
 * are ignored. The speculative decoding flags (--draft-model, --draft-kind, ...) are
 * draft_flags.h's.
 * and the numerics (backend/numerics.h), which `hearth benchmark` takes too:
 *
 *   --l1 | --l2 | --numerics l1|l2|ref   the tier (default l1; ref on HEARTH_KERNELS=ref)
 *   --compiled-decode on|off             the A/B switches (default on; "--x=off" also reads)
 *   --fused-sdpa on|off
 *   --compiled-activations on|off
 *   --force-wire                         lock the weights in RAM (mlock)
 *   --kv-quant off|8|4|turbo[:kXvY]|config  the KV cache's scheme (engine/kv_quant.h)
 *
 * A size is a number of GB (10^9 bytes, fractions allowed) or a number with a unit ("512MB",
 * "1.5GiB"). Parsing only; the engine decides what the values mean.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "cli/draft_flags.h"
#include "engine/engine.h"

typedef struct {
    long long batch, block_size;                      /* 0: the default */
    long long state_snaps;                            /* -1: the default */
    int64_t   prompt_cache, kv_budget, memory_budget; /* bytes; -1: the default */
    hearth_numerics numerics;                         /* {0}: the default */
    hearth_kv_quant kv_quant;                         /* {0}: off */
    bool      force_wire;
    const char *ssd_dir;                              /* NULL: the disk tier is off */
    int64_t   ssd_max;                                /* bytes; -1: the default */
    long long ssd_demote;                             /* seconds; -1: the default */
    bool      ssd_verify;
    const char *ssd_flag;                             /* a tier flag given (for the warning) */
    cli_draft_flags draft;                            /* speculative decoding (draft_flags.h) */
} cli_engine_flags;

void cli_engine_flags_init(cli_engine_flags *f);
/* argv[*i] is an engine flag (the draft flags included): consume it (and its value, advancing
 * *i). Returns 1 when it was one, 0 when it is not an engine flag, -1 after printing an error.
 * After the last flag, cli_draft_flags_check(&f->draft); cli_draft_apply loads a draft model. */
int  cli_engine_flag(int argc, char **argv, int *i, cli_engine_flags *f);
/* Only the numerics flags (tier, switches, --force-wire), as cli_engine_flag answers. */
int  cli_numerics_flag(int argc, char **argv, int *i, cli_engine_flags *f);
/* Fill the engine params from the flags (the memory budget defaults to 0.75 x RAM); warns
 * (once) about tier flags given without --ssd-cache. model_path: the model's file, whose
 * identity keys the disk tier. */
void cli_engine_flags_apply(const cli_engine_flags *f, hearth_engine_params *ep);
/* Only the numerics and --force-wire into ep. */
void cli_numerics_apply(const cli_engine_flags *f, hearth_engine_params *ep);
/* "numerics=l1 compiled-decode=on fused-sdpa=on compiled-activations=on force-wire=off" of a
 * running engine, into buf (benchmark rows). */
void cli_numerics_levers(const hearth_engine *e, char *buf, size_t cap);
/* The levers line of a ready card ("batch 8, KV pool 1.2 GB (...)"), into buf. */
void cli_engine_levers(const hearth_engine *e, char *buf, size_t cap);

/* The usage lines of these flags, for the verbs' help texts. */
#define CLI_ENGINE_FLAGS_USAGE                                                                            \
    "  --batch N             sequences decoded together (default 8; 1 = strictly serial);\n"            \
    "                        --decode-concurrency N is the same\n"                                        \
    "  --prompt-cache GB     KV of finished requests kept for prefix reuse (default 8; 0 disables)\n"   \
    "  --state-snapshots N   Qwen3.5 / Qwen3-Next: recurrent-state snapshots kept at block\n"          \
    "                        boundaries for prefix reuse (default: from the batch, context and\n"     \
    "                        budget; 0: no prefix reuse for them); taken out of the KV budget\n"      \
    "  --kv-budget GB        size of the KV block pool (default, or 0: what the memory budget\n"      \
    "                        leaves)\n"                                                               \
    "  --memory-budget GB    weights + KV + transients (default, or 0: 0.75 x RAM); a model that\n"   \
    "                        cannot serve one request of the full context refuses to load\n"          \
    "  --paged-kv            accepted and ignored: the KV cache is always paged (one block pool)\n"   \
    "  --paged-kv-block-size N   tokens per KV block (default 16)\n"                                   \
    "  --ssd-cache DIR       keep the prompt cache's KV blocks on disk too: evicted blocks are\n"      \
    "                        written to DIR and read back on a miss, across restarts (default off;\n"  \
    "                        one server per DIR)\n"                                                    \
    "  --ssd-cache-max GB    size of the files in DIR at most, least recently used go (default 32)\n"  \
    "  --ssd-demote-idle SEC cached prefixes unused this long move to disk, freeing the KV pool\n"     \
    "                        (default 300; 0 never)\n"                                                 \
    "  --ssd-cache-verify    check every restored block's full checksum (a header checksum is\n"       \
    "                        always checked)\n" CLI_DRAFT_FLAGS_USAGE CLI_NUMERICS_FLAGS_USAGE

#define CLI_NUMERICS_FLAGS_USAGE                                                                          \
    "  --l1                  numerics tier l1 (the default): bit-identical to llama.cpp's x86 order\n"   \
    "                        on GGUF models (8-bit activations, f16 KV cache)\n"                         \
    "  --l2                  tier l2: l1 with the 8-bit KV cache, bit-identical to llama.cpp with\n"     \
    "                        -ctk q8_0 -ctv q8_0 and flash attention (CPU; implies --kv-quant 8)\n"     \
    "  --kv-quant MODE       the KV cache: off (f16, the default), 8 or 4 (llama.cpp's q8_0 / q4_0\n"    \
    "                        blocks of 32 with an f16 scale; CPU and CUDA),\n"                        \
    "                        turbo[:k<bits>v<bits>] (rotated then quantized: key bits 2, 4, 5, 8,\n"   \
    "                        value bits 2, 3, 4, 5, 8; default k8v3; heads of a multiple of\n"    \
    "                        64), config (a per-layer scheme from the model's kv_config.json:\n"      \
    "                        DIR/kv_config.json, or FILE.gguf.kv_config.json or kv_config.json\n"    \
    "                        beside a GGUF; bits 8 -> q8_0, 4 -> q4_0, 16/null -> f16;\n"            \
    "                        group_size 32 or 64; off without one)\n"                                 \
    "  --numerics l1|l2|ref  the tier by name (ref: transformers' f32 order, the default with\n"         \
    "                        HEARTH_KERNELS=ref)\n"                                                      \
    "  --compiled-decode on|off       replay decode steps as one CUDA graph (default on);\n"            \
    "                                 selects nothing on the CPU\n"                                      \
    "  --fused-sdpa on|off            multi-query attention kernels (default on); on CUDA the\n"        \
    "                                 CUDA-core attention grouped by kv head, off: per query head\n"     \
    "  --compiled-activations on|off  gate/up matmul and GLU in one CUDA launch (default on);\n"       \
    "                                 selects nothing on the CPU\n"                                      \
    "                        the three are A/B levers: off takes a slower path of the same bits\n"      \
    "  --force-wire          lock the weights in RAM (mlock); fails, saying why, when the locked-\n"     \
    "                        memory limit (ulimit -l) is too small\n"
