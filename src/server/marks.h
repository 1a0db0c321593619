/*
 * marks.h - find markup strings in streamed text: the earliest complete marker, or how many
 * trailing bytes might still become one (and so must be held back from the client).
 *
 * Shared by the tool-call parser (toolcall.h) and the reasoning splitter (reasoning.h), which
 * both cut decoded text at fixed marker strings (<tool_call>, </think>, [TOOL_CALLS] ...) that
 * may arrive split over any number of pieces.
 *
 * Thread rule: pure function; any thread.
 */
#pragma once
#include <stddef.h>

/* The earliest complete occurrence in s[0..n) of any of marks[0..n_marks) (NULL entries are
 * skipped; at one position the longest mark wins). Returns its index with *at its offset, or
 * -1 with *hold the length of the longest suffix of s that is a proper prefix of some mark. */
int hearth_marks_find(const char *s, size_t n, const char *const *marks, int n_marks, size_t *at, size_t *hold);
