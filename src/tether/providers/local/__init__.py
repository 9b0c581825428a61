"""The embedded local model: llama-cpp-python in a supervised child process.

Modules (in tether's process):
    provider    `LocalProvider`: a reply from the model's child process turned into events
    supervisor  the child process per loaded model: start, probe and fallback, crash → error
    verdicts    which load configuration works per model file × llama.cpp build × CPU
Modules (run in the child, `python -m tether.providers.local.child`):
    child       the socket loop and the fault switch (`TETHER_LOCAL_FAULT`)
    engine      one reply: protocol, prompt, grammar, second pass, prompt cache
    models      the bundled and named GGUF files, loading a model with a `LoadConfig`
    prompt      the JSON protocol: system prompt, rendering the wire view, hints, parsing replies
    native      the native protocol (the model's own chat template, `<tool_call>` blocks)
    grammar     GBNF grammars that constrain every reply to a valid call or an answer
    prompt_cache  evaluated prompt prefixes kept on disk across processes
"""
