"""What a command checks before it starts work, torch-free so a bad input costs no model load:
the engine's inputs and checkpoints, ports, the output lock, the inductor cache folder, the
bench's arguments; and how a run meets a signal (interrupts, the stop supervisor)."""
