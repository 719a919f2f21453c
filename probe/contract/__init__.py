"""The torch-free contract: the values that cross threads, processes and files (options,
records, the session, the live view, the protocol), and the figures computed from them.
The dashboard imports only this package of probe/; a test keeps torch out of it."""
