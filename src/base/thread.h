/*
 * thread.h - a fork-join compute pool (STYLE 2.7; ggml's threadpool, llama2.c's OpenMP loops).
 *
 * hearth_pool_run(pool, fn, arg) calls fn(arg, ith, nth) once on each of the pool's nth
 * threads, the caller being ith 0, and returns when all have returned. Work is split by
 * (ith, nth) inside fn: row striding for uniform work, an atomic chunk counter for uneven
 * work. Workers spin briefly after a job (decode steps come back-to-back) and then sleep on a
 * condition variable. hearth_pool_barrier is a phase barrier for use inside fn.
 *
 * Thread rule: one thread drives a pool (the engine thread); fn must not call run again.
 */
#pragma once

typedef struct hearth_pool hearth_pool;
typedef void (*hearth_pool_fn)(void *arg, int ith, int nth);

/* n_threads counts the caller; <= 0 means the number of online CPUs. NULL on failure. */
hearth_pool *hearth_pool_create(int n_threads);
/* Joins the workers. Accepts NULL. */
void hearth_pool_destroy(hearth_pool *pool);
int  hearth_pool_size(const hearth_pool *pool);
/* Run fn on every thread of the pool; pool may be NULL (runs fn(arg, 0, 1) inline). */
void hearth_pool_run(hearth_pool *pool, hearth_pool_fn fn, void *arg);
/* Wait until all nth threads of the current run reach the barrier. Call only inside fn, from
 * every thread the same number of times. */
void hearth_pool_barrier(hearth_pool *pool);

/* Number of online CPUs (>= 1). */
int hearth_cpu_count(void);
