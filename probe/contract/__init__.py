"""The torch-free contract: the values that cross threads and processes (options, records, the
session, the live view, the protocol in protocol.py), the figures computed from them, and the
torch-free checks every command runs before torch loads. Sessions on disk (journal, snapshot
files, export, printing) are probe/session_store/, built on this package. The dashboard imports
only these two packages of probe/; tests keep torch and the engine out of both."""
