#!/usr/bin/env python3
"""foldbench's launcher of llama-cpp-python's OpenAI-compatible server (tests/local-model.sh).

It is the stock server (`python -m llama_cpp.server`, same arguments) with one chat format added,
`foldbench-function-calling`: llama-cpp-python's `chatml-function-calling` with the request's
`max_tokens` applied to every generation it runs. The stock format passes `max_tokens=None` to the
generation that writes a plain message (the model chose to answer without a tool call), so a
small model that rambles there writes until its context is full — minutes per request on a CPU —
whatever the client asked; the same holds for a call's arguments (a JSON string can go on for
ever) and for calls made one after another. With this format a request's `max_tokens` bounds
every generation (choosing between a message and a function takes fewer than 20 tokens; ask
for more than that) and at most four calls are generated in full; a request without
`max_tokens` behaves exactly as with the stock format.
"""

from llama_cpp import llama_chat_format as formats
from llama_cpp.server.__main__ import main

# Generations of one request before the rest are cut short: one to choose between a message and
# a function, then two per call (its arguments, then whether another call follows).
MAX_RUNS = 9


@formats.register_chat_completion_handler("foldbench-function-calling")
def foldbench_function_calling(llama, **kwargs):
    cap = kwargs.get("max_tokens")
    if cap is None:
        return formats.chatml_function_calling(llama, **kwargs)
    stock = llama.create_completion
    runs = [0]

    def capped(*args, **kw):
        runs[0] += 1
        if kw.get("max_tokens") is None:
            # A model can also call tools one after another until the context is full: past
            # MAX_RUNS generations, each is cut to one token, which ends the loop.
            kw["max_tokens"] = cap if runs[0] <= MAX_RUNS else 1
        return stock(*args, **kw)

    llama.create_completion = capped
    try:
        return formats.chatml_function_calling(llama, **kwargs)
    finally:
        del llama.create_completion


if __name__ == "__main__":
    main()
