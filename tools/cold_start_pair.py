"""One config's cold-start pair measured alone (docs/results.md's table): its first request in
a fresh process from scratch, then in another from the cache the first left, as E1 measures it:

    python -m tools.cold_start_pair MODEL OPTS INPUT OUTPUT THREADS

prints the pair's figures as JSON."""

from __future__ import annotations

import json
import sys

from probe.runs.cold_start import measure_pair


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print("usage: python -m tools.cold_start_pair MODEL OPTS INPUT OUTPUT THREADS",
              file=sys.stderr)
        return 2
    model, options, input_length, output_length, threads = argv
    print(json.dumps(measure_pair(model, options, input_length=int(input_length),
                                  output_length=int(output_length),
                                  threads=int(threads)).as_dict(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
