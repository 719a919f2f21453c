"""The run machinery that bench and tune share: a planned run and its results, cold start,
spread and verdicts, the open-loop study, the capacity search under an SLO, and the Ray
cluster and its workers. Below both, so neither imports the other."""
