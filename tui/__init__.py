"""The Textual dashboard: a view over the LiveView values the engine publishes. `app` composes
it and holds its parts (the engine side, the option changes, the warm switch, the live A/B, what
the engine's events do); `launch` starts it with its engine; `widgets/` holds one panel a file.
Imports probe/ and workloads/, never the reverse."""
