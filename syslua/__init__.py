"""syslua: a declarative system manager configured in Lua."""

__version__ = "0.1.0"
