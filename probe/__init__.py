"""The engine and everything computed from what it serves, in layers from the bottom up
(tests/test_layers_run_down.py): common; contract; analysis; checks; session_store; the
engine's model, measure/observe, decode, itself, monitoring and process; runs; report_charts;
bench and tune. This module itself only quiets two torch loggers nobody can act on."""

import logging as _logging

# torchao, which transformers imports with the model classes, registers its enums with torch's
# pytree, and torch warns once per enum on every start: noise nobody can act on, kept off the
# terminal. Setting a logger's level imports nothing.
_logging.getLogger("torch.utils._pytree").setLevel(_logging.ERROR)
# The CUDA build of torch on a machine without CUDA says so at every compile.
_logging.getLogger("torch.utils.cpp_extension").setLevel(_logging.ERROR)
# infertop's own log records (a chart's "Glyph 27 missing from font", a run's debug lines) are
# for the log, never the terminal: with a handler in the hierarchy, logging's last resort (a
# WARNING to stderr) never fires. Inside a headless command they go to the engine log
# (probe/engine/process/third_party_output.py routes the `probe` logger there).
_logging.getLogger("probe").addHandler(_logging.NullHandler())
