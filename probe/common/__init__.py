"""The utilities every package shares, importing nothing of the project: errors, atomic
writes, text reading, terminal-safe text, argument types, CSV tables, units, the session
clock, the one percentile definition (`percentile`). The bottom layer."""
