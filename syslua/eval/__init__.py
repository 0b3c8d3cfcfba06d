"""Evaluation: run a config in LuaJIT (or read a CCM YAML manifest) into raw declarations.

Lua objects never leave this package: the prelude encodes every declaration
as JSON, and callers receive plain Python data (`RawDeclaration`).
"""
