"""The manifest: what the machine should be, resolved from declarations.

`resolve` evaluates a config (and its `apply` children), `schema` validates
and normalises each declaration, `merge` combines declarations by key and
priority, and `model` holds the frozen result with its canonical JSON.
"""
