/*
 * toolcall_internal.h - what toolcall.c shares with toolcall_args.c: recording a call, and the
 * converters of non-JSON call bodies into JSON arguments.
 */
#pragma once
#include <cjson/cJSON.h>

#include "server/toolcall.h"

/* s[0..n) parsed as one JSON value with nothing but whitespace after it, else NULL. */
cJSON *hearth_tc_parse_exact(const char *s, size_t n);

/* Record a call (copies everything; id NULL or empty: one is made). False on OOM. */
bool hearth_tc_add(hearth_tc *p, const char *name, size_t n_name, const char *args, size_t n_args, const char *id,
                   size_t n_id);
/* These return 1 when calls were added, -1 when the body is not a call, -2 on OOM. */
/* Qwen3-Coder: <function=f><parameter=k>v</parameter>...</function> */
int hearth_tc_xml_call(hearth_tc *p, const char *s, size_t n);
/* Python call syntax, one call per line: f(k="v", n=1, flag=True, xs=[1, 2]) */
int hearth_tc_python_calls(hearth_tc *p, const char *s, size_t n);
/* call:f{k:<DELIM>text<DELIM>,n:1,o:{...}} with DELIM the string quote token */
int hearth_tc_gemma_call(hearth_tc *p, const char *s, size_t n, const char *delim);
