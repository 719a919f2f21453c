"""What the engine reads about itself while it serves: compile events and stages, guards, device
load, the CPU of its process tree."""
