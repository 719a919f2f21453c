"""A dashboard attached to a running `infertop serve` (issue 53): wire.py (the channel's JSON),
board.py (the links the server holds: who steers, who watches, their event queues), hub.py
(the live views and the warm switch inside the server), live_ab.py (the live A/B on real
arrivals), routes.py (its HTTP endpoints) and link.py (ServerLink: the dashboard's EngineLink
over HTTP)."""
