"""Charts of what the reports already hold, written as SVG and PNG with matplotlib (the
optional `plots` extra). Nothing here recomputes a figure: a chart plots the records of a
session (read back by probe.session_store.snapshot) or the numbers a report.json holds, and returns
the series it plotted so a test can hold them against the report.

matplotlib is imported only when a chart is drawn (canvas.py), so importing this package, the
bench or the contract costs nothing where the extra is not installed.
"""
