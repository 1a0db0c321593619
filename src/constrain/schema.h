/*
 * schema.h - JSON Schema to grammar rules (grammar.h): the values a schema accepts, written as
 * JSON text, as a rule a caller can wrap (a tool-call syntax around arguments, whitespace
 * around a response).
 *
 * Supported: type (a name or a list), object with properties / required /
 * additionalProperties (false or absent: only the listed properties; true or a schema: more,
 * after them), array with items / minItems / maxItems, string with minLength / maxLength,
 * number, integer (non-negative when minimum >= 0), boolean, null, enum, const, anyOf and oneOf
 * (both as "one of these"), allOf with one member, $ref into the document's $defs or
 * definitions, and the schemas true and {} (any JSON value). Properties come out in the
 * schema's order, required ones first (as llama.cpp's converter does). Keywords that only
 * narrow values further (pattern, format, minimum / maximum, multipleOf, uniqueItems, ...)
 * are ignored, so the output may not honor them; what cannot be honored at all is refused:
 * the schema false, allOf of several schemas, recursive $refs, $refs outside the document.
 *
 * Bounds (a hostile schema is refused with HEARTH_E_LIMIT and a message): nesting depth,
 * enum size, literal length, properties per object, repetition counts; plus the builder's
 * own (rules, states, stack). Numbers are bounded too (16 integer digits, 16 fraction digits,
 * 3 exponent digits) and whitespace between tokens to one space or a newline and 20 indent
 * characters, so that a model cannot loop inside a value forever.
 *
 * Thread rule: one compiler (hearth_cx_json) per builder, one thread.
 */
#pragma once
#include <cjson/cJSON.h>

#include "constrain/grammar.h"

#define HEARTH_CX_SCHEMA_DEPTH   24   /* schema levels (objects, arrays, anyOf, $ref) */
#define HEARTH_CX_ANY_DEPTH      6    /* nesting of values a schema leaves free ({} or true) */
#define HEARTH_CX_MAX_ENUM       1024 /* values of one enum */
#define HEARTH_CX_MAX_LITERAL    4096 /* bytes of one enum / const value or property name */
#define HEARTH_CX_MAX_PROPS      128  /* properties of one object */
#define HEARTH_CX_MAX_REPEAT     2048 /* minItems, maxItems, minLength, maxLength */
#define HEARTH_CX_MAX_REFS       64   /* $refs being expanded at once */

typedef struct {
    hearth_cx_builder *b;      /* borrowed */
    const cJSON       *doc;    /* borrowed: the document $refs resolve in (may be NULL) */
    int                ws, chr, rest, str, num, intg, nonneg, boolean, null; /* shared rules, -1 until made */
    int                any[HEARTH_CX_ANY_DEPTH + 1];             /* any value, by depth left */
    int                any_obj[HEARTH_CX_ANY_DEPTH + 1];         /* any object, by depth left */
    int32_t            depth;
    const char        *refs[HEARTH_CX_MAX_REFS];                 /* $refs in progress */
    int32_t            n_refs;
    char               avoid[3]; /* (optional) two bytes no string may hold in a row: a closing
                                  * marker's start that would end the markup around the JSON
                                  * ("</" of </tool_call>, "``" of ```); strings cannot end in
                                  * avoid[0] then, and with length bounds cannot hold it */
    bool               python;  /* write Python literals (True, False, None; strings with the
                                 * escapes \" \\ \n \r \t only) for Python-call tool syntax */
} hearth_cx_json;

void hearth_cx_json_init(hearth_cx_json *j, hearth_cx_builder *b, const cJSON *doc);
/* A rule for the JSON text of a value schema accepts; -1 with the builder failed (its message
 * says why: hearth_cx_builder_status). */
int  hearth_cx_json_value(hearth_cx_json *j, const cJSON *schema);
/* Whitespace allowed between JSON tokens (bounded, see above). */
int  hearth_cx_json_ws(hearth_cx_json *j);
/* Any JSON object (response_format json_object). */
int  hearth_cx_json_object(hearth_cx_json *j);
/* Keyword arguments for a Python call, parentheses included: (k=v, ...) with the properties
 * of an object schema as the keywords (required first, as objects; names must be
 * identifiers); any identifiers when the schema lists no properties. Set python first. */
int  hearth_cx_json_kwargs(hearth_cx_json *j, const cJSON *schema);
/* A JSON string literal of s[0..n) (escaped as JSON) as a rule. */
int  hearth_cx_json_string_lit(hearth_cx_json *j, const char *s, size_t n);
