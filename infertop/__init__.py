"""The `infertop` command line: `infertop/cli.py` names every sub-command."""
