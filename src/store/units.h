/*
 * units.h - byte sizes and counts for people: "1.23 GB", "135M" parameters, and the parser of
 * size flags ("10GB", "500MB", "1.5GiB", "4096"). Decimal units (GB = 1e9 bytes) as the hub
 * and disk makers show them; binary ones (GiB) are accepted where spelled out.
 * Pure functions; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n bytes as "98.4 MB" / "1.23 GB" / "512 B" into buf (always NUL-terminated). */
void hearth_fmt_bytes(int64_t n, char *buf, size_t len);
/* A count as "135M", "1.54B", "812K", "42" into buf. */
void hearth_fmt_count(int64_t n, char *buf, size_t len);
/* Parse a size: a number (with an optional fraction) and an optional unit B, K/KB, M/MB,
 * G/GB, T/TB (decimal) or KiB/MiB/GiB/TiB (binary), case-insensitive, spaces allowed between.
 * False for anything else, a negative value or one beyond int64. */
bool hearth_parse_bytes(const char *s, int64_t *out);
