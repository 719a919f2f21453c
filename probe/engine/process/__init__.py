"""The engine in a process of its own (so a CPU compile never freezes the UI), the side engine
of a warm switch, headless `replay`, and the files they keep."""
