"""The engine: loads the model, applies the options, serves requests through a decode path
and records what each one cost, in a process of its own under the dashboard.

Layered, each layer importing only those below it (tests/test_import_graph.py keeps it so):
- `process/` (the engine in a process of its own, the warm switch's side engine, headless
  `replay`, their logs and journals);
- the engine itself, the modules here: `engine` (one request under the current OptConfig),
  `serving` (the loop that puts the trace's requests on a queue at their arrival times),
  `continuous_scheduler` (continuous batching's loop), `switchboard` (an OptConfig turned into
  something that decodes), `compile_cache`, `compile_cache_key` and `state_files` (compiled
  functions kept under the state folder), `calibration`, `precision_copies`, `matmul_chain`,
  `workload_setup`, and the peer engine the bench measures against (`peer_ctranslate2`,
  `peer_process`);
- `decode/`: the decode paths and KV caches the switchboard chooses between (HF generate, the
  static loop, batching slots, paged KV, int8);
- `measure/` (the machine and the step: bandwidth, the step's roofline, timing) and `observe/`
  (what the engine reads about itself: compile events and stages, guards, CUDA graphs, device
  load, the CPU of its process tree);
- `model/`: the model, its tokenizer, and a request as the engine sees it.
"""
