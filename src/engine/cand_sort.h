/*
 * cand_sort.h - the sampler's candidates (token id, probability) sorted by probability
 * descending, ties by the lower id first, in linear time.
 *
 * top-p over a flat row (a high temperature, a random model) keeps most of a 100k-150k
 * vocabulary, and a comparison sort of that many candidates costs more than the rest of a CPU
 * decode step. Probabilities are non-negative floats, whose bit patterns order as unsigned
 * integers, so a least-significant-digit radix sort over the complemented bits (3 passes of 11
 * bits, stable) gives the descending order; candidates arrive in ascending id order, and
 * stability keeps that order among equal probabilities: the comparison sort's tie rule. Below
 * a few hundred candidates the comparison sort is used.
 * Pure function of its arguments; any thread.
 */
#pragma once
#include <stdint.h>

typedef struct {
    int32_t id;
    float   p; /* >= 0 */
} hearth_cand;

/* c[0..n) sorted (p descending, then id ascending); c must be in ascending id order where p
 * ties (as the sampler fills it). tmp: scratch of n entries. */
void hearth_cand_sort_desc(hearth_cand *c, hearth_cand *tmp, int32_t n);
/* The order itself, for qsort and for checks. */
int  hearth_cand_cmp_desc(const void *a, const void *b);
