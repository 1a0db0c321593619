/*
 * pool_metrics.h - /metrics of `serve --isolate`: the serving process's own series merged with
 * each resident engine child's, which carry the engine's counters (tokens, generations, KV
 * use, prompt cache, speculation) that only the child has.
 *
 * Every READY child's /metrics is fetched over its unix socket (engine_get.h), all at once
 * under one short deadline for the whole scrape (so N stopped children cost it once); a child that does not answer in time is left out of this scrape and counted in
 * hearth_engine_scrape_failures_total. A child's series get a model="<id>" label (added first
 * in the label set); its hearth_info is dropped (the serving process's says the build). The
 * result stays valid text format 0.0.4: every metric family appears once, with one HELP and
 * one TYPE line, and all its samples (the serving process's, then each child's) together.
 *
 * Thread rule: any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "server/engines.h"
#include "server/json_out.h"

/* One exposition text to merge: its samples labelled model="<model>" (NULL: left as they are;
 * with a model, a sample that has a `model` label already keeps it, and hearth_info is left out). */
typedef struct {
    const char *text;
    size_t      len;
    const char *model;
} hearth_prom_part;

/* The parts merged family by family into out (appended). false when memory ran out. */
bool hearth_prom_merge(const hearth_prom_part *parts, int n, hearth_buf *out);

/* Replace the text exposition in w (the serving process's own) with it merged with the
 * children's. When memory runs out on the way, w is left as it was. */
void hearth_pool_metrics(hearth_engines *g, hearth_jw *w);
