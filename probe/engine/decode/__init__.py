"""Decode paths and KV caches: HF generate, the static loop, continuous batching, paged KV, int8."""
