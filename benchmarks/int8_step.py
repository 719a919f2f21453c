"""fp32 against quant=int8 on the compiled static decode loop, alternated in one run; prints
ms/token (median and range of 8 rounds) and the token agreement. Not part of the study: the
side-by-side figure docs/engine-vs-peer.md quotes.

    PYTHONPATH=$PWD python benchmarks/int8_step.py t5-small 12 [threads] [eager]
"""

from __future__ import annotations

import copy
import os
import sys
import time


def main(argv: list[str]) -> None:
    import torch

    from probe.engine.decode.static_loop import StaticGreedyDecoder
    from probe.engine.model.loading import load_model
    from probe.engine.model.requests import EngineRequest, input_ids
    from probe.engine.switchboard import quantize
    name, tokens = argv[0], int(argv[1])
    torch.set_num_threads(int(argv[2]) if len(argv) > 2 else 1)
    compiled = "eager" not in argv[3:]
    loaded = load_model(name)
    fp32 = loaded.model.eval()
    row = input_ids(EngineRequest("a", 3, 64, 64, 0.0), loaded.tokenizer,
                    fp32.config.vocab_size, 512)
    ids = torch.tensor([row])
    mask = torch.ones_like(ids)
    int8 = copy.deepcopy(fp32)
    refused = quantize(int8, "int8")
    if refused:
        raise SystemExit(refused)
    wrap = (lambda fn: torch.compile(fn, fullgraph=True)) if compiled else (lambda fn: fn)
    decoders = {name: StaticGreedyDecoder(model, max_new_tokens=tokens, use_cache=True, wrap=wrap)
                for name, model in (("fp32", fp32), ("int8", int8))}
    times: dict[str, list[float]] = {k: [] for k in decoders}
    reference = None
    loads = []
    with torch.inference_mode():
        for key, decoder in decoders.items():
            start = time.perf_counter()
            out = decoder.generate(ids, mask, tokens).tokens[0].tolist()
            reference = reference or out
            same = sum(a == b for a, b in zip(out, reference)) / tokens
            print(f"{key}: first call {time.perf_counter() - start:.1f} s, tokens {same:.0%} "
                  f"equal to fp32")
        for i in range(8):
            loads.append(os.getloadavg()[0])
            for key in (list(decoders) if i % 2 == 0 else list(reversed(decoders))):
                result = decoders[key].generate(ids, mask, tokens)
                times[key].append((result.end - result.first_token) * 1e3 / (tokens - 1))
    print(f"{name}, {'compiled' if compiled else 'eager'}, {torch.get_num_threads()} threads, "
          f"load {min(loads):.1f}–{max(loads):.1f}")
    for key, values in times.items():
        values.sort()
        print(f"{key}: {(values[3] + values[4]) / 2:.2f} ms/token "
              f"({values[0]:.2f}–{values[-1]:.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
