"""The GPU acceptance (`make gpu-check`, docs/gpu.md): NVML, batching, the decode matrix, a
SIGTERM during a compile and the dashboard, each section in processes of its own."""
