"""The Textual dashboard: a view over the LiveView values the engine publishes. `app` composes
it; `launch` starts it with its engine; `engine_reader` turns the engine's events into messages;
the key handling, the warm switch and the live A/B are here; `widgets/` holds one panel a file.
Imports probe/ and workloads/, never the reverse."""
