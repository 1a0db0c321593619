/*
 * file.h - read a whole small file (a config.json, a tokenizer.json) into memory.
 *
 * Only regular files, and only up to a size the caller names: a missing file, a folder, a
 * file over the limit or a short read all give NULL, so a loader can say which file it could
 * not use without telling these apart. Thread rule: any thread.
 */
#pragma once
#include <stddef.h>

/* The bytes of path plus a NUL after them, malloc'ed (caller frees); *len (may be NULL) gets the
 * size. NULL when path is not a readable regular file of at most max bytes, or on no memory. */
char *hearth_file_read(const char *path, size_t max, size_t *len);
