"""Measurements of the machine and the decode step: bandwidth, the step's roofline, timing,
kernel profiles. Below the decode paths, which time themselves with it."""
