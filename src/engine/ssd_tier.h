/*
 * ssd_tier.h - the prompt cache's second tier: full KV blocks in files under a directory, so a
 * long shared prefix (an agent's system prompt) is prefilled once per machine, across restarts
 * (docs/engine.md "SSD tier").
 *
 * A block is keyed as the prefix cache keys it (prefix_cache.h: the chained XXH3 hash of its
 * tokens, its parent's hash and its layer group) within a namespace: a digest of the model's
 * identity (the model file's sha256 when the store knows it, else an XXH3-128 of the file),
 * the KV scheme ("f16", "f32", later the quantized ones), the block's tokens and bytes and the
 * pool's geometry. One file per block, `<namespace>-<hash>-<group>.kv`, written to a temporary
 * name and renamed into place (a crash leaves the old state or the new, never half a block):
 *
 *   header   magic "HRTHKV01", the namespace, model id, scheme, hash, parent, group, tokens,
 *            payload bytes and XXH3 of the payload, then an XXH3 of the header itself
 *   payload  the block's K and V rows (kv_pool.h hearth_kv_pool_block_to_host)
 *
 * A restore always checks the header's checksum, the identity fields, the tokens and the
 * file's size (a truncated file is caught); with verify it also checks the payload's checksum.
 * A block failing any check is deleted and counted (verify_failures); the caller recomputes it.
 *
 * The index (namespace, hash, group -> file) lives in memory, rebuilt at open by scanning the
 * directory (files of other models stay, counted in the size, never matched); its LRU order is
 * the files' modification times (a restore touches its file). Past max_bytes the least recently
 * used files are deleted. Leftover temporary files of a killed writer are deleted at open.
 *
 * Writes go through a bounded queue to one writer thread (put never blocks on the disk unless
 * asked to wait for room). A write that fails (disk full, directory made read-only or deleted)
 * turns the tier read-only with one warning: the engine goes on with its RAM cache. A directory
 * that cannot be written at open (read-only) opens read-only with a warning. Two processes on
 * one directory: the second open fails (an exclusive flock on DIR/lock names the holder's pid).
 *
 * Thread rule: every function may be called from any thread (one mutex guards the index and the
 * queue; the files are read outside it).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_ssd_tier hearth_ssd_tier;

#define HEARTH_SSD_MODEL_ID_MAX 96 /* bytes of the model id, its NUL included */
#define HEARTH_SSD_SCHEME_MAX   16

typedef struct {
    const char *dir;         /* created (with its parents) when missing */
    int64_t     max_bytes;   /* files kept at most; <= 0: 32 GB */
    const char *model_id;    /* e.g. "sha256:<hex>" (hearth_ssd_model_id); < HEARTH_SSD_MODEL_ID_MAX */
    const char *scheme;      /* the KV element scheme, e.g. "f16"; < HEARTH_SSD_SCHEME_MAX */
    int32_t     block_tokens;
    size_t      block_bytes; /* payload bytes of every block */
    uint64_t    geometry;    /* anything else that changes what a block's bytes mean (layer groups) */
    bool        verify;      /* check every payload's checksum on restore */
    size_t      queue_bytes; /* payload bytes the write queue holds at most; 0: 64 MiB (and
                              * never more than 1024 blocks) */
} hearth_ssd_tier_params;

typedef enum { HEARTH_SSD_OFF = 0, HEARTH_SSD_ON, HEARTH_SSD_READ_ONLY } hearth_ssd_state;

typedef struct {
    int64_t state;           /* hearth_ssd_state */
    int64_t bytes, blocks;   /* files in the directory (all namespaces) */
    int64_t hits;            /* lookups whose block is indexed */
    int64_t misses;          /* lookups whose block is not */
    int64_t restores;        /* blocks read back whole and sound */
    int64_t verify_failures; /* blocks dropped: checksum, truncation, identity */
    int64_t writes;          /* blocks written */
    int64_t write_errors;    /* writes that failed (the tier went read-only) */
    int64_t write_skipped;   /* puts dropped: the queue was full or the tier read-only */
    int64_t evictions;       /* files deleted past max_bytes */
} hearth_ssd_tier_stats;

/* Open (scan) the tier. Fails with HEARTH_E_BUSY when another process holds the directory,
 * HEARTH_E_INVALID on bad params; a directory that cannot be written opens read-only (a
 * warning is logged) and one that cannot be made or read opens with nothing in it. */
hearth_status hearth_ssd_tier_open(const hearth_ssd_tier_params *p, hearth_ssd_tier **out, hearth_err *err);
/* Write what is queued, stop the writer, release the lock. Accepts NULL. */
void          hearth_ssd_tier_close(hearth_ssd_tier *t);

/* Is the block (hash, group) of this namespace indexed (written, or queued to be)? */
bool          hearth_ssd_tier_has(hearth_ssd_tier *t, uint64_t hash, int32_t group);
/* Can a put be taken now (writable, and the queue has room)? A false answer because the
 * queue is full counts as a skipped write (the caller then drops the block). */
bool          hearth_ssd_tier_writable(hearth_ssd_tier *t);
/* Is the tier writable at all (not read-only)? */
bool          hearth_ssd_tier_on(hearth_ssd_tier *t);
/* Queue block (hash after parent, group, tokens[block_tokens]) for writing; payload is a
 * malloc'd block_bytes buffer that the tier takes over (freed in every case). wait: block until
 * the queue has room, else a full queue drops it. False when dropped. */
bool          hearth_ssd_tier_put(hearth_ssd_tier *t, uint64_t hash, uint64_t parent, int32_t group,
                                  const int32_t *tokens, void *payload, bool wait);
/* Read block (hash after parent, group, tokens) into out (block_bytes). True when it was found
 * and sound; a block failing its checks is deleted and counted. */
bool          hearth_ssd_tier_get(hearth_ssd_tier *t, uint64_t hash, uint64_t parent, int32_t group,
                                  const int32_t *tokens, void *out);
/* Wait until every queued write is done. */
void          hearth_ssd_tier_drain(hearth_ssd_tier *t);
void          hearth_ssd_tier_stats_get(hearth_ssd_tier *t, hearth_ssd_tier_stats *out);

/* The identity of the model at path, into id (HEARTH_SSD_MODEL_ID_MAX bytes): "sha256:<hex>"
 * when the file (after symlinks) is a blob of the hub cache named by its sha256, else
 * "xxh128:<hex>" of the file's bytes (every regular file of a checkpoint folder, by name).
 * *ms (may be NULL) gets the time it took. */
hearth_status hearth_ssd_model_id(const char *path, char *id, double *ms, hearth_err *err);
