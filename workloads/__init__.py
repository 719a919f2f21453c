"""Traffic: traces (the built-in ones in `builtin/`), their importers (`importers/`), reading,
fitting to T5's lengths, the synthetic generator, bucket planning, and the replayers that put
a trace's requests on the engine's queue at their arrival times (open or closed loop), a
replay's rate below the clock's floor as a thinned trace (`thinning`).
Torch-free; of the project it imports only probe.common."""
