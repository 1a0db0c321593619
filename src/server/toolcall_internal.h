/*
 * toolcall_internal.h - what toolcall.c shares with toolcall_args.c and toolcall_partial.c:
 * the markup kinds, recording a call, the converters of non-JSON call bodies into JSON
 * arguments, and reading the calls of markup that is still being written.
 */
#pragma once
#include <cjson/cJSON.h>

#include "server/json_out.h"
#include "server/toolcall.h"

/* What an opening marker starts. */
enum {
    HEARTH_TCK_HERMES,       /* <tool_call> JSON or <function=f> XML </tool_call> */
    HEARTH_TCK_PYTAG,        /* <|python_tag|> JSON */
    HEARTH_TCK_MISTRAL,      /* [TOOL_CALLS] JSON array, or f[CALL_ID]id[ARGS]{...} */
    HEARTH_TCK_TOOL_CODE,    /* ```tool_code Python calls ``` */
    HEARTH_TCK_GEMMA_CALL,   /* <start_function_call>call:f{...}<end_function_call> */
    HEARTH_TCK_GEMMA4_CALL,  /* <|tool_call>call:f{...}<tool_call|> */
    HEARTH_TCK_BARE,         /* Llama 3: a JSON object as the reply */
    HEARTH_TCK_HARMONY,      /* to=functions.f ... <|message|>JSON<|call|> */
};

/* A call in markup that is still open, as far as it is decided. */
typedef struct {
    hearth_span name;  /* the call's name */
    hearth_span id;    /* the model's id when it came before the arguments, else empty */
    hearth_span args;  /* a prefix of the JSON arguments the finished markup gives */
    bool        done;  /* args is all of them */
} hearth_tc_partial;

/* Call k (0, 1, ... within the markup) of the open markup of kind `kind` whose body so far is
 * b[0..n): 1 when it can be announced (its name is known and its arguments began) with *pc
 * filled (spans into b or into w, which is reset first), 0 when not (yet). */
int hearth_tc_partial_call(int kind, const char *b, size_t n, int k, hearth_tc_partial *pc, hearth_jw *w);
/* The converters' readers of partial bodies (toolcall_args.c), same contract. */
int hearth_tc_python_partial(const char *s, size_t n, int k, hearth_tc_partial *pc, hearth_jw *w);
int hearth_tc_gemma_partial(const char *s, size_t n, const char *delim, hearth_tc_partial *pc, hearth_jw *w);
int hearth_tc_xml_partial(const char *s, size_t n, hearth_tc_partial *pc, hearth_jw *w);

/* gpt-oss: the body after "to=functions." - the name (up to whitespace or '<'), anything up to
 * <|message|>, then the JSON arguments. Whole: 1 added, -1 not a call, -2 OOM; partial: as
 * hearth_tc_partial_call. */
int hearth_tc_harmony_call(hearth_tc *p, const char *s, size_t n);
int hearth_tc_harmony_partial(const char *s, size_t n, hearth_tc_partial *pc);

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
