/*
 * toolcall.h - tool calls in a model's streamed reply, in each family's native markup, split
 * from the plain content and turned into OpenAI-shaped calls {id, name, arguments (JSON text)}.
 *
 * Formats (hearth_tc_detect picks one from the chat template, else the architecture):
 *
 *   HERMES   <tool_call>{"name": "f", "arguments": {...}}</tool_call>   Hermes, Qwen 2.5/3,
 *            SmolLM3 and other ChatML tool templates; also the Qwen3-Coder body
 *            <tool_call><function=f><parameter=k>v</parameter></function></tool_call>
 *   LLAMA3   {"name": "f", "parameters": {...}} as the reply (leading whitespace allowed, calls
 *            may follow each other, ';' between), or after <|python_tag|>
 *   MISTRAL  [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abc123xyz"}, ...] (v3) or
 *            [TOOL_CALLS]f[CALL_ID]abc123xyz[ARGS]{...} / [TOOL_CALLS]f[ARGS]{...} (v11+)
 *   GEMMA    ```tool_code\nf(k="v", n=1)\n``` (Gemma 3's documented convention, Python call
 *            syntax, one call per line), <start_function_call>call:f{k:<escape>v<escape>}
 *            <end_function_call> (FunctionGemma) and <|tool_call>call:f{k:<|"|>v<|"|>}<tool_call|>
 *            (Gemma 4)
 *   HARMONY  <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>, or
 *            the recipient in the header: <|start|>assistant to=functions.f<|channel|>commentary
 *            json<|message|>{...}<|call|> (gpt-oss; the reasoning splitter has dropped
 *            <|start|>assistant). <|call|> ends the model's turn: a call whose JSON is complete
 *            when the reply ends without it stands as if it had been written
 *
 * Text is fed as it decodes, in pieces split anywhere (a marker may span pieces; the parser
 * holds back any tail that could still begin one). Each push returns the content that is now
 * final and the calls whose markup closed; `in_call` says that markup is open, so a streaming
 * caller knows text is being held. Markup that turns out not to be a well-formed call (bad
 * JSON, an unclosed block at the end) is given back as content, unchanged, as mlx-bun does.
 *
 * Incremental mode (hearth_tc_stream_args, for streams): each push also reports its calls'
 * steps as deltas - BEGIN (index, id, name) once the name is known and the arguments began,
 * ARGS pieces as the model writes them (for JSON bodies every byte as it arrives; for
 * converted bodies each argument once its separator arrived), END when they are complete - so
 * the pieces of a call concatenate to its final arguments. Nothing is announced before it is
 * certain to be a call's: until then the markup is held as in whole mode. Once a call has
 * been announced it stands: if its markup is then cut off or malformed, the call keeps the
 * arguments sent so far (like OpenAI's own truncated calls) instead of turning into content.
 * The model's own id is used when it precedes the arguments (Mistral's [CALL_ID]).
 *
 * Arguments are the model's own JSON text (numbers spelled as it wrote them), checked to be a
 * JSON object; Python-call and call:{} arguments are converted to JSON. Ids are the model's
 * when it wrote one (Mistral), else made from the seed given at create: "call_" + 24 hex
 * digits, or 9 alphanumerics for Mistral, whose templates refuse any other id on the way back.
 *
 * Control tokens: Mistral's [TOOL_CALLS] and Gemma 4's <|tool_call> are control tokens that
 * a decoder drops by default; hearth_tc_is_marker tells the caller which control-token texts
 * to feed in.
 *
 * Thread rule: one parser per reply, one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/span.h"
#include "base/status.h"

typedef enum {
    HEARTH_TC_NONE = 0, /* no tool calls: every byte is content */
    HEARTH_TC_HERMES,
    HEARTH_TC_LLAMA3,
    HEARTH_TC_MISTRAL,
    HEARTH_TC_GEMMA,
    HEARTH_TC_HARMONY,
    HEARTH_TC_COUNT
} hearth_tc_format;

/* The format a model's replies use: from markers in its chat template (may be NULL), else from
 * its architecture name (GGUF general.architecture or HF model_type; may be NULL). Templates
 * that render no tool markup (Gemma 3, SmolLM2) fall back to the architecture; HERMES when
 * nothing says otherwise, since ChatML-style tool prompts ask for it. */
hearth_tc_format hearth_tc_detect(const char *chat_template, const char *arch);
/* "none", "hermes", "llama3", "mistral", "gemma", "harmony"; from a name: HEARTH_TC_COUNT when unknown. */
const char      *hearth_tc_format_name(hearth_tc_format f);
hearth_tc_format hearth_tc_format_from_name(const char *name);
/* Is text[0..n) the text of a control token this format's markup uses (feed it in)? */
bool             hearth_tc_is_marker(hearth_tc_format f, const char *text, size_t n);

typedef struct {
    int   index;     /* 0, 1, ... in reply order */
    char *id;        /* owned by the parser, NUL-terminated */
    char *name;      /* owned */
    char *arguments; /* owned: a JSON object's text */
} hearth_tool_call;

/* Incremental mode: the steps of a streamed call. */
typedef enum {
    HEARTH_TC_BEGIN = 0, /* the call is announced: id and name (arguments follow) */
    HEARTH_TC_ARGS,      /* the next piece of its arguments */
    HEARTH_TC_END,       /* its arguments are complete (args: all of them) */
} hearth_tc_event;

typedef struct {
    hearth_tc_event kind;
    int             index; /* the call's index */
    const char     *id;    /* NUL-terminated, every kind (valid until the next push) */
    const char     *name;
    hearth_span     args;  /* ARGS: the piece; END: the whole arguments; BEGIN: empty */
    size_t          at;    /* bytes of this push's content that come before this step */
} hearth_tc_delta;

typedef struct {
    hearth_span             content; /* content now final (valid until the next call) */
    const hearth_tool_call *calls;   /* calls completed by this call: [n_calls], valid until the
                                      * next push (the parser keeps them all; hearth_tc_calls) */
    int                     n_calls;
    bool                    in_call; /* tool-call markup is open: text is being held */
    const hearth_tc_delta  *deltas;  /* incremental mode: this push's call steps [n_deltas], in
                                      * order, interleaved with content by their `at` */
    int                     n_deltas;
} hearth_tc_out;

typedef struct hearth_tc hearth_tc;

/* A parser for format f; id_seed makes the ids it invents. NULL on OOM. */
hearth_tc *hearth_tc_create(hearth_tc_format f, uint64_t id_seed);
void       hearth_tc_destroy(hearth_tc *p); /* accepts NULL */
/* Incremental mode (call before the first push): calls are also reported as deltas while
 * their markup is still open, so a stream can send the arguments as the model writes them. */
void       hearth_tc_stream_args(hearth_tc *p);
/* Feed text[0..n). HEARTH_E_NOMEM leaves the parser unusable (out is then empty). */
hearth_status hearth_tc_push(hearth_tc *p, const char *text, size_t n, hearth_tc_out *out);
/* The reply ended: what is still held is resolved (an open call parsed if it can be, else
 * given back as content). Later pushes are ignored. */
hearth_status hearth_tc_finish(hearth_tc *p, hearth_tc_out *out);
/* Every call so far: [*n] (owned by the parser). */
const hearth_tool_call *hearth_tc_calls(const hearth_tc *p, int *n);
