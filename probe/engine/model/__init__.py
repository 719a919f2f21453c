"""The model the engine serves (the embedded presets or a local T5 checkpoint), its offline
tokenizer, and a request as the engine sees it: the bottom of the engine."""
