"""The session store: sessions on disk and on paper. The journal a running engine appends to,
the snapshot (a session saved as JSON) and its reading, `snapshot recover`, `export`, and the
printed tables of `snapshot show|compare` and `replay`. Torch-free and engine-free, like the
contract it reads (a test keeps it so): the dashboard, the engine, the bench and the commands
all read and write sessions through it.

Exports, by module: `snapshot` (read_document, saved_session, snapshot_document), `journal`
(JournalWriter, JournaledSession, Dispatch), `journal_reader` (read_journal, Journal),
`recover` (recover), `tables` (text_table), `ledger_table` (ledger_rows, ledger_text),
`snapshot_report` (show, compare)."""
