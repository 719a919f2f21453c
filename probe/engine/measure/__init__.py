"""Measurements of the machine and the decode step: bandwidth, the step's roofline, calibration,
timing, the GPU checks."""
