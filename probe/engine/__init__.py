"""The engine: loads the model, applies the options, serves requests through a decode path
and records what each one cost, in a process of its own under the dashboard.

Here: what serves — `engine` (one request under the current OptConfig), `serving` (the loop that
puts the trace's requests on a queue at their arrival times), `switchboard` (an OptConfig turned
into something that decodes), `compile_cache` and `compile_cache_key` (compile_cache=on: compiled
functions saved under the state folder and loaded by a restart), `models`, `tokenizer`,
`requests`, `workload_setup`, `peer_ctranslate2` (the peer engine the bench measures against)
and `peer_process` (that peer in a process of its own).
By role, below it:
- `process/`: the engine in a process of its own, the warm switch's side engine, headless
  `replay`, and the files they keep (logs, journals).
- `decode/`: decode paths and KV caches (HF generate, the static loop, continuous batching,
  paged KV, int8).
- `observe/`: what the engine reads about itself while it serves (compile events and stages,
  guards, device load, the CPU of its process tree).
- `measure/`: measurements of the machine and the step (bandwidth, the step's roofline,
  calibration, timing, the GPU checks).
"""
