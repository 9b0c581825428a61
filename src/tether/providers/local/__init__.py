"""The embedded local model: llama-cpp-python in process, no key, no network.

Modules:
    provider   `LocalProvider`: generation in a worker thread, replies streamed as events
    models     the bundled and named GGUF files, loading a model once per process
    prompt     the JSON protocol: system prompt, rendering the wire view, hints, parsing replies
    native     the native protocol (the model's own chat template, `<tool_call>` blocks)
    grammar    GBNF grammars that constrain every reply to a valid call or an answer
"""
