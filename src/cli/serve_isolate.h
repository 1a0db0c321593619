/*
 * serve_isolate.h - the command-line half of `serve --isolate` (docs/isolation.md): which of
 * serve's flags its engine children get, how a request's model name finds a model of the
 * store, and the hidden `_engine` verb a child runs.
 */
#pragma once
#include "server/engines.h"
#include "server/pool_memory.h"

/* Start the engine children of `hearth serve ARGS --isolate` (argv as serve's parser saw it;
 * model_arg: the positional model argument, which a child gets as the model's path instead).
 * pool: --model-pool (0: none, so only the default model is served); heartbeat: seconds.
 * With a pool, mem (borrowed: it must outlive *out) sizes each model for the admission by
 * memory against budget_bytes (<= 0: 0.75 x RAM, the engine's default budget). */
hearth_status cli_isolate_start(int argc, char **argv, const char *model_arg, const char *path, const char *model_id,
                                int pool, int heartbeat, hearth_pool_memory *mem, int64_t budget_bytes,
                                hearth_engines **out, hearth_err *err);

/* `hearth _engine MODEL --unix SOCK [serve flags]`: serve as an engine child (killed with its
 * parent; no ready card). Not listed in help. */
int cli_engine_child(int argc, char **argv);

/* "org/name" of a file in the hub cache (models--org--name/...), else the file name without
 * .gguf (cmd_serve.c). */
void cli_model_id_of(const char *path, char *out, size_t cap);
