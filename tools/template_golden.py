#!/usr/bin/env python3
"""template_golden.py - the oracle for chat templates: Python jinja2 set up as transformers sets it up.

transformers' apply_chat_template (utils/chat_template_utils.py, _compile_jinja_template and
render_jinja_template) compiles a template with

    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson          # json.dumps(x, ensure_ascii=False, indent=None,
                                            #            separators=None, sort_keys=False)
    env.globals["raise_exception"] = raise_exception   # raises TemplateError(message)
    env.globals["strftime_now"] = strftime_now         # datetime.now().strftime(format)

and renders it with messages, tools (None when absent), documents (None), add_generation_prompt,
the tokenizer's special tokens (bos_token, eos_token, ...) and the caller's kwargs. The
AssistantTracker extension adds the {% generation %}...{% endgeneration %} tag, which renders its
body as it is unless assistant masks are requested. This file does the same with jinja2 alone (no
torch, no transformers), so the conformance suite can run it in the test venv.

As a command it mirrors `hearth template` (for debugging a difference):

    tools/template_golden.py --template FILE --messages FILE [--tools FILE] [--kwargs JSON]
                             [--no-generation-prompt]

prints the rendered prompt, or "error: <message>" on stderr with exit status 1 when the
template raises.
"""
import argparse
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker as it behaves without return_assistant_tokens_mask."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def context(messages, tools=None, add_generation_prompt=True, special_tokens=None, kwargs=None):
    """The variables transformers passes to the template, in its order (later keys win)."""
    ctx = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt}
    ctx.update(special_tokens or {})
    ctx.update(kwargs or {})
    return ctx


def compile(template):
    """A compiled template, or the exception jinja2 raises for it (a syntax error)."""
    try:
        return environment().from_string(template)
    except Exception as e:
        return e


def render(template, ctx):
    """(True, text) or (False, "ExceptionType: message") for template text (or what compile()
    gave for it) and a context dict."""
    compiled = compile(template) if isinstance(template, str) else template
    if isinstance(compiled, Exception):
        return False, f"{type(compiled).__name__}: {compiled}"
    try:
        return True, compiled.render(**ctx)
    except Exception as e:  # what transformers would let propagate to the caller
        return False, f"{type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template", required=True)
    ap.add_argument("--messages", required=True)
    ap.add_argument("--tools")
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--no-generation-prompt", action="store_true")
    a = ap.parse_args()
    with open(a.template, encoding="utf-8") as f:
        template = f.read()
    with open(a.messages, encoding="utf-8") as f:
        messages = json.load(f)
    tools = None
    if a.tools:
        with open(a.tools, encoding="utf-8") as f:
            tools = json.load(f)
    ok, out = render(template, context(messages, tools, not a.no_generation_prompt, None, json.loads(a.kwargs)))
    if not ok:
        print(f"error: {out}", file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
